"""The primitives table: one row per primitive, read by every stage.

A `Primitive` row says everything a stage needs to know about one operation:

==============  ===========================================================================================
name            the op name in the graph (`Node.op`) and, for elementwise ops, in the kernel IR (`Val.op`)
kind            leaf | unary | binary | select | cast | reduce | movement | collective — how the graph builds it and how
                the lowering and the reference treat it structurally
arity           number of sources
dtype           the dtype rule: ``dtype(*source dtypes) -> result dtype``, raising GraphError on a bad input
numpy           the reference implementation of an elementwise op: ``numpy(node, *source arrays)`` (floats
                arrive as float64, integers in their own width, booleans as numpy bools)
vjp             the vector-Jacobian rule: ``vjp(node, grad, live, kit)`` yields (source, gradient node) for
                sources in ``live`` (ember/autograd drives it)
c, cuda         how the C-like renderers write the op: a template (``{x0}``, ``{x1}``… the operands, ``{ct}``
                the compute type, ``{f}`` "f" for float math functions, ``{max}`` the max helper) or a
                function ``(operands, ct, dtype, dialect) -> str``; ``cuda`` maps a compute type to a
                template that replaces ``c`` there (the SFU approximations)
helper          C text defining functions the op's expression calls (``{fn}`` is replaced by the
                dialect's function qualifiers), added to each renderer's prelude
cost            ALU cost of recomputing it once, for the lowering's inline-or-materialise rule
commutative     operands may be put in one canonical order (the graph does, so CSE finds both orders)
egraph          the operator's name in the e-graph (ember/search/egraph.py)
==============  ===========================================================================================

`GRAPH` holds the graph's primitives (leaves, elementwise ops, reductions, movement); `ALU` holds every
op a kernel's scalar values may use: the graph's elementwise primitives plus two the lowering and the
schedules introduce (``neg``, and ``max``, the scalar form of the MAX reduction). Leaves, reductions and
movement are structural: the stages handle them by kind, and their rows carry the dtype rule, the
gradient, the cost and the e-graph name. A new elementwise primitive is one row in a module of this
package plus its test cases in tests/op_cases/ (docs/architecture.md, "Primitives").
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..dtypes import DType


class GraphError(ValueError):
    """A graph that cannot be built (shape or dtype mismatch, bad argument)."""


KINDS = ("leaf", "unary", "binary", "select", "cast", "reduce", "movement", "collective")
ELEMENTWISE_KINDS = ("unary", "binary", "select", "cast")


@dataclass(frozen=True)
class Primitive:
    name: str
    kind: str
    arity: int
    dtype: Callable | None = None
    numpy: Callable | None = None
    vjp: Callable | None = None
    c: str | Callable | None = None
    cuda: dict | None = None
    helper: str = ""
    cost: int = 1
    commutative: bool = False
    egraph: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"primitive {self.name}: unknown kind {self.kind!r}")
        if not self.egraph:
            object.__setattr__(self, "egraph", self.name)

    @property
    def elementwise(self) -> bool:
        return self.kind in ELEMENTWISE_KINDS

    def render(self, target: str, operands: list, ct: str, dtype: DType, dialect) -> str:
        """The op as a C expression for `target` ("c" or "cuda") in compute type ct."""
        form = (self.cuda or {}).get(ct) if target == "cuda" else None
        if form is None:
            form = self.c
        if form is None:
            raise AssertionError(f"primitive {self.name} has no C form")  # pragma: no cover
        if callable(form):
            return form(operands, ct, dtype, dialect)
        f = "f" if ct == "float" else ""
        mx = "em_maxf" if ct == "float" else "em_maxd" if ct == "double" else "em_maxi"
        return form.format(*operands, ct=ct, f=f, max=mx, **{f"x{i}": x for i, x in enumerate(operands)})


GRAPH: dict = {}  # graph primitives by name, in registration order
ALU: dict = {}  # kernel-IR scalar ops by name


def register(row: Primitive, graph: bool = True, alu: bool | None = None) -> Primitive:
    """Add a row: to the graph's primitives (graph=True) and, for elementwise ops (or alu=True), to the
    kernel IR's scalar ops. A name may be registered once in each table."""
    alu = row.elementwise if alu is None else alu
    for table, on in ((GRAPH, graph), (ALU, alu)):
        if on:
            if row.name in table:
                raise ValueError(f"primitive {row.name} registered twice")
            table[row.name] = row
    return row


def names(kind: str) -> tuple:
    """Names of the graph primitives of one kind, in registration order."""
    return tuple(n for n, r in GRAPH.items() if r.kind == kind)


def alu_names(arity: int) -> tuple:
    """Names of the kernel IR's arithmetic ops with `arity` operands (casts excluded)."""
    return tuple(n for n, r in ALU.items() if r.arity == arity and r.kind != "cast")


def helpers(fn_qualifiers: str) -> str:
    """The C helper functions of every row, for a renderer's prelude."""
    return "".join(r.helper.replace("{fn}", fn_qualifiers) for r in ALU.values() if r.helper)


# the rows, one module per group (imported last: they register themselves through the names above)
from . import elementwise as _elementwise  # noqa: E402
from . import random as _random  # noqa: E402
from . import structural as _structural  # noqa: E402  (leaves, reductions, movement)
from . import collective as _collective  # noqa: E402  (all-reduce, all-gather across ranks)
