"""Kernel IR: a small loop-nest language shared by every backend.

A `Kernel` is a tree of statements over named buffers:

* `Loop(var, extent, kind, body)` — ``kind`` says how a backend may run it: ``parallel`` (independent
  iterations: OpenMP on the CPU; grid/block/threads on the GPU), ``reduce`` (iterations combine into
  accumulators), ``serial``;
* `Acc(name, op, dtype)` declares an accumulator (``sum`` starts at 0, ``max`` at -inf), `Update`
  combines a value into it, `Store` writes a value to ``buffer[index]``.

Scalar values form a hash-consed DAG (`Val`): loads through symbolic index expressions (with a
validity guard that reads as 0), constants, index arithmetic used as a value, accumulator reads, and
the elementwise primitives. Index expressions are `ember.symbolic` expressions over the loop variables
and the named dimensions (which become kernel parameters).

Kernels produced by the default lowering have a canonical shape: outer ``parallel`` loops over the
"rows" of the output, then a sequence of *stages* — an `Acc` followed by a ``reduce`` loop, inner
``parallel`` loops with stores, or plain stores. Backends map that shape onto their hardware
(`ember.codegen`). `Kernel.key` (sha256 of the printed form) keys every kernel cache.
"""
from __future__ import annotations

import hashlib
import weakref
from dataclasses import dataclass, field
from typing import AbstractSet, Iterable, cast

from .. import primitives as P
from .. import symbolic as sm
from ..dtypes import DType
from ..graph import Node, toposort
from ..symbolic import Expr

# ------------------------------------------------------------------------------------------------
# scalar values

# the arithmetic ops are the primitives table's kernel ops (ember/primitives: ALU)
UNARY_OPS = P.alu_names(1)
BINARY_OPS = P.alu_names(2)
VAL_OPS = ("load", "const", "index", "acc") + tuple(P.ALU)

_INTERN: "weakref.WeakValueDictionary[tuple, Val]" = weakref.WeakValueDictionary()


class Val:
    """A scalar value. ``args`` depend on ``op``:

    load: (buffer, index Expr | Val, valid Expr)   const: (python value,)   index: (Expr,)
    acc: (name,)   unary: (Val,)   binary: (Val, Val)   where: (cond, a, b)   cast: (Val,)
    """

    __slots__ = ("op", "args", "dtype", "__weakref__")

    op: str
    args: tuple
    dtype: DType

    def __new__(cls, op: str, args: tuple, dtype: DType):
        k = (op, tuple(("f", a.hex()) if isinstance(a, float) else a for a in args), dtype)
        v = _INTERN.get(k)
        if v is not None:
            return v
        v = object.__new__(cls)
        v.op, v.args, v.dtype = op, args, dtype
        _INTERN[k] = v
        return v

    @property
    def srcs(self) -> tuple:
        return tuple(a for a in self.args if isinstance(a, Val))

    def __repr__(self) -> str:
        return render_val(self)


def load(buffer: str, index, valid: Expr, dtype: DType) -> Val:
    return Val("load", (buffer, index, valid), dtype)


def const(value, dtype: DType) -> Val:
    if dtype.is_float:
        value = float(value)
    elif dtype.is_bool:
        value = bool(value)
    else:
        value = int(value)
    return Val("const", (value,), dtype)


def index(e: Expr, dtype: DType) -> Val:
    e = sm.sym(e)
    if e.is_const:
        return const(e.value, dtype)
    return Val("index", (e,), dtype)


def acc(name: str, dtype: DType) -> Val:
    return Val("acc", (name,), dtype)


def alu(op: str, dtype: DType, *srcs: Val) -> Val:
    return Val(op, tuple(srcs), dtype)


# ------------------------------------------------------------------------------------------------
# statements


@dataclass(frozen=True)
class Loop:
    var: str
    extent: Expr
    kind: str  # "parallel" | "reduce" | "serial"
    body: tuple


@dataclass(frozen=True)
class Acc:
    name: str
    op: str  # "sum" | "max"
    dtype: DType  # accumulation dtype
    tf32: bool = False  # a sum of products whose operands may be rounded to TF32 (ember/precision.py)


@dataclass(frozen=True)
class Update:
    name: str
    op: str
    value: Val


@dataclass(frozen=True)
class Store:
    buffer: str
    index: Expr
    value: Val


@dataclass(frozen=True)
class Local:
    """A kernel-local array (one per iteration of the enclosing parallel loops): on chip on the GPU
    (shared memory), on the stack on the CPU. Stores and loads address it by name."""
    name: str
    dtype: DType
    size: int


@dataclass(frozen=True)
class BufferParam:
    name: str
    dtype: DType
    size: Expr  # elements
    role: str  # "in" | "out"


@dataclass(frozen=True)
class Kernel:
    name: str
    buffers: tuple  # BufferParam, in signature order
    dims: tuple  # names of symbolic dimensions passed as integer parameters
    body: tuple
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        return hashlib.sha256(print_kernel(self, with_name=False).encode()).hexdigest()

    def buffer(self, name: str) -> BufferParam:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def __str__(self) -> str:
        return print_kernel(self)


# ------------------------------------------------------------------------------------------------
# traversal helpers

def walk_stmts(body: Iterable) -> Iterable:
    for s in body:
        yield s
        if isinstance(s, Loop):
            yield from walk_stmts(s.body)


def stmt_vals(s) -> list:
    if isinstance(s, Update):
        return [s.value]
    if isinstance(s, Store):
        return [s.value]
    return []


def map_stmts(body: tuple, value, buffer=lambda b: b) -> tuple:
    """`body` with every statement's value v replaced by value(v) and every store's buffer b by
    buffer(b) (loops rebuilt around them)."""
    def rs(s):
        if isinstance(s, Loop):
            return Loop(s.var, s.extent, s.kind, tuple(rs(x) for x in s.body))
        if isinstance(s, Update):
            return Update(s.name, s.op, value(s.value))
        if isinstance(s, Store):
            return Store(buffer(s.buffer), s.index, value(s.value))
        return s
    return tuple(rs(s) for s in body)


def val_toposort(roots: Iterable[Val]) -> list[Val]:
    """Values reachable from roots, each after its sources (the graph's traversal: Val has .srcs)."""
    # graph.toposort is typed over Node but reads only `.srcs` (and hashing), which Val has too
    return cast("list[Val]", toposort(cast("Iterable[Node]", roots)))


def reads_acc(v: Val, name: str) -> bool:
    """Whether value v reads accumulator `name`."""
    return any(x.op == "acc" and x.args[0] == name for x in val_toposort([v]))


def substitute(v: Val, mapping: dict, memo: dict | None = None) -> Val:
    """`v` with the index variables named in `mapping` replaced by expressions, in every load index,
    load guard and index value (`memo` shares the work across calls on one mapping)."""
    memo = {} if memo is None else memo
    r = memo.get(v)
    if r is not None:
        return r
    if v.op == "load":
        b, idx, valid = v.args
        idx = substitute(idx, mapping, memo) if isinstance(idx, Val) else sm.substitute(idx, mapping)
        r = Val("load", (b, idx, sm.substitute(valid, mapping)), v.dtype)
    elif v.op == "index":
        r = index(sm.substitute(v.args[0], mapping), v.dtype)
    elif v.srcs:
        r = Val(v.op, tuple(substitute(a, mapping, memo) if isinstance(a, Val) else a for a in v.args), v.dtype)
    else:
        r = v
    memo[v] = r
    return r


def loads_of(k: Kernel) -> list[Val]:
    out: list[Val] = []
    for s in walk_stmts(k.body):
        for v in stmt_vals(s):
            out.extend(x for x in val_toposort([v]) if x.op == "load")
    return out


# ------------------------------------------------------------------------------------------------
# printing

def render_val(v: Val) -> str:
    if v.op == "load":
        b, idx, valid = v.args
        i = render_val(idx) if isinstance(idx, Val) else str(idx)
        return f"{b}[{i}]" + ("" if valid is sm.ONE else f" if {valid}")
    if v.op == "const":
        return repr(v.args[0])
    if v.op == "index":
        return f"idx({v.args[0]})"
    if v.op == "acc":
        return v.args[0]
    if v.op == "cast":
        return f"{v.dtype.name}({render_val(v.args[0])})"
    return f"{v.op}(" + ", ".join(render_val(a) for a in v.args) + ")"


def render_dag(root: Val) -> tuple:
    """(let-bindings, expression) for a value DAG: a sub-value used more than once is printed once as
    `%n = ...` (so printing, and Kernel.key, stay linear in the DAG's size — 31 chained squarings would
    otherwise print 2^31 leaves)."""
    order = val_toposort([root])
    uses: dict = {}
    for v in order:
        for src in v.srcs:
            uses[src] = uses.get(src, 0) + 1
    text: dict = {}
    lets: list[str] = []
    for v in order:
        if v.op == "load":
            b, idx, valid = v.args
            i = text[idx] if isinstance(idx, Val) else str(idx)
            t = f"{b}[{i}]" + ("" if valid is sm.ONE else f" if {valid}")
        elif v.op == "const":
            t = repr(v.args[0])
        elif v.op == "index":
            t = f"idx({v.args[0]})"
        elif v.op == "acc":
            t = v.args[0]
        elif v.op == "cast":
            t = f"{v.dtype.name}({text[v.args[0]]})"
        else:
            t = f"{v.op}(" + ", ".join(text[a] for a in v.args) + ")"
        if uses.get(v, 0) > 1 and v.op not in ("const", "acc", "index"):
            name = f"%{len(lets)}"
            lets.append(f"{name} = {t}")
            t = name
        text[v] = t
    return lets, text[root]


def print_kernel(k: Kernel, with_name: bool = True) -> str:
    lines = []
    sig = ", ".join(f"{b.role} {b.name}: {b.dtype.name}[{b.size}]" for b in k.buffers)
    dims = (" dims(" + ", ".join(k.dims) + ")") if k.dims else ""
    lines.append(f"kernel {k.name if with_name else '_'}({sig}){dims}")

    def go(body, ind):
        for s in body:
            pad = "  " * ind
            if isinstance(s, Loop):
                lines.append(f"{pad}for {s.var} in {s.kind}({s.extent}):")
                go(s.body, ind + 1)
            elif isinstance(s, Acc):
                lines.append(f"{pad}{s.name}: {s.dtype.name} = {s.op}-identity{' (tf32 products)' if s.tf32 else ''}")
            elif isinstance(s, Local):
                lines.append(f"{pad}local {s.name}: {s.dtype.name}[{s.size}]")
            elif isinstance(s, (Update, Store)):
                lets, e = render_dag(s.value)
                lines.extend(pad + x for x in lets)
                if isinstance(s, Update):
                    lines.append(f"{pad}{s.name} = {s.op}({s.name}, {e})")
                else:
                    lines.append(f"{pad}{s.buffer}[{s.index}] = {e}")
    go(k.body, 1)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# verification

class KernelVerifyError(AssertionError):
    pass


def verify(k: Kernel) -> None:
    """Structural checks: buffers declared, loop variables and accumulators in scope, stores only to
    outputs, index expressions only over variables in scope and declared dims."""
    bufs = {b.name: b for b in k.buffers}
    if len(bufs) != len(k.buffers):
        raise KernelVerifyError(f"{k.name}: duplicate buffer names")

    def check_expr(e: Expr, scope: set, what: str):
        free = sm.free_vars(e)
        bad = free - scope - set(k.dims)
        if bad:
            raise KernelVerifyError(f"{k.name}: {what} uses {sorted(bad)} outside their scope")

    def check_val(v: Val, scope: set, accs: set, locs: AbstractSet[str] = frozenset()):
        for x in val_toposort([v]):
            if x.op == "load":
                b, idx, valid = x.args
                if b not in bufs and b not in locs:
                    raise KernelVerifyError(f"{k.name}: load from undeclared buffer {b}")
                if isinstance(idx, Expr):
                    check_expr(idx, scope, f"load index {idx}")
                check_expr(valid, scope, f"load guard {valid}")
            elif x.op == "index":
                check_expr(x.args[0], scope, f"index value {x.args[0]}")
            elif x.op == "acc" and x.args[0] not in accs:
                raise KernelVerifyError(f"{k.name}: accumulator {x.args[0]} read before it is declared")

    def go(body, scope: set, accs: set, locs: set):
        accs, locs = set(accs), set(locs)
        for s in body:
            if isinstance(s, Loop):
                if s.var in scope:
                    raise KernelVerifyError(f"{k.name}: loop variable {s.var} shadows an outer one")
                check_expr(s.extent, scope, f"extent of {s.var}")
                go(s.body, scope | {s.var}, accs, locs)
            elif isinstance(s, Acc):
                accs.add(s.name)
            elif isinstance(s, Local):
                if s.name in bufs:
                    raise KernelVerifyError(f"{k.name}: local {s.name} shadows a buffer")
                locs.add(s.name)
            elif isinstance(s, Update):
                if s.name not in accs:
                    raise KernelVerifyError(f"{k.name}: update of undeclared accumulator {s.name}")
                check_val(s.value, scope, accs, locs)
            elif isinstance(s, Store):
                if s.buffer not in locs and (s.buffer not in bufs or bufs[s.buffer].role != "out"):
                    raise KernelVerifyError(f"{k.name}: store to {s.buffer}, which is not an output")
                check_expr(s.index, scope, f"store index {s.index}")
                check_val(s.value, scope, accs, locs)
            else:
                raise KernelVerifyError(f"{k.name}: unknown statement {s!r}")

    go(k.body, set(), set(), set())
