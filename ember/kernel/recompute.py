"""Rule 4's cost model, and its exception for few-row contractions: recompute a cheap broadcast
operand per output.

Rule 4 materialises a non-trivial elementwise value read through a broadcast inside a reduction
loop, since recomputing it per broadcast copy multiplies its cost. For a contraction with a handful
of rows (a decode step's GEMV: one token's normalised hidden state times a weight matrix) the
multiplied cost is small against the weight stream the kernel reads anyway (K operand values per
output, each a few ALU operations on cache-resident data, against K weights from memory), while the
materialised value is a kernel of its own: a one-block launch per normalisation, ~3 us of a ~1 ms
step, 32 of them in a Llama-3.2-1B decode step. So for such a kernel the operand is inlined and
recomputed per output, together with the row statistics it reads (an RMSNorm's sum of squares
becomes a stage recomputed per output point: rule 3 does not cut it).

Recomputing is only cheap for a short expression. An expression the statistics *and* the
elementwise path both read (the RMSNorm's input h) would be evaluated in two loops per output; when
it costs more than RECOMPUTE_LIMIT (a residual stream: the sum of every earlier layer's outputs) it
is materialised instead — by the kernel that produces it (the previous GEMV's residual epilogue),
which cuts the residual chain once per layer. If what remains still costs more than RECOMPUTE_FEW
operations per element, rule 4 applies as before.
"""
from __future__ import annotations

import contextvars
import os

from .. import dtypes as dt
from .. import graph as g
from .. import primitives as P
from .. import symbolic as sm
from . import ir
from .contraction import is_contraction

# off by default: measured slower as first built (the statistics a stage before the product, per warp:
# the qkv GEMV 13.1 us against 5.7 + 2.4, 2026-11-26); `lower` sets it from the Target's `fold_norms`,
# which also takes the row statistics out of the product (`split_invariant_factor`) so both stages
# run in one loop
ENABLED: contextvars.ContextVar = contextvars.ContextVar("few_row_recompute", default=False)

FEW_ROWS = 4  # operand rows (M) of a contraction that recomputes its broadcast operand
FEW_MIN_BROADCAST = 64  # ... each operand element being read by at least this many outputs
RECOMPUTE_FEW = 16  # ALU operations per element such a recomputed operand may cost


def few_row_recompute(b, view_numel, src, scoords, limit: int) -> set | None:
    """For builder b reading src (at scoords, inside a reduction loop) through a broadcasting view
    of view_numel elements: None when rule 4 applies (materialise src); else the set of nodes to
    materialise so that src is cheap to recompute per output (often empty)."""
    if not ENABLED.get() or b.local or not b.stage_nodes or not is_contraction(b.stage_nodes[-1]):
        return None
    if not (src.numel.is_const and view_numel.is_const) or view_numel.value < FEW_MIN_BROADCAST * src.numel.value:
        return None
    red = set().union(*(sm.free_vars(c) for c in scoords)) & b.reduce_scope
    ext = 1
    for r in red:
        e = b.scope_ext.get(r)
        if e is None or not e.is_const:
            return None
        ext *= e.value
    if src.numel.value > FEW_ROWS * ext:
        return None
    costly = {n for n in _shared_with_statistics(b, src) if inline_cost(b, n, limit) > limit}
    cut = set()
    for n in _topmost(b, costly):  # below a cast or another unary op: its operand (the stream itself)
        while n.op in g.UNARY + (g.CAST,) and n.srcs[0] in costly:
            n = n.srcs[0]
        cut.add(n)
    if inline_cost(b, src, RECOMPUTE_FEW, cut) > RECOMPUTE_FEW:
        return None
    return cut


def _inline(b, n) -> bool:
    return n.op not in g.LEAVES and not b.is_buffer(n)


def _reach(b, roots, through_reductions: bool) -> set:
    seen: set = set()
    stack = [r for r in roots if _inline(b, r)]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op in g.REDUCE and not through_reductions:
            continue
        stack.extend(s for s in n.srcs if _inline(b, s))
    return seen


def _shared_with_statistics(b, src) -> set:
    """Nodes of src's inlined expression read both inside one of its reductions and outside them."""
    outside = _reach(b, [src], False)
    reductions = [n for n in outside if n.op in g.REDUCE]
    inside = _reach(b, [s for r in reductions for s in r.srcs], True)
    return (outside - set(reductions)) & inside


def _topmost(b, nodes: set) -> set:
    """The nodes of `nodes` that no other node of it reaches (materialising those cuts the rest)."""
    below = _reach(b, [s for n in nodes for s in n.srcs], True)
    return {n for n in nodes if n not in below}


def inline_cost(b, n, limit: int | None = None, cut=frozenset()) -> int:
    """Rule 4's cost model: ALU cost of the expression builder b inlines at n (each node once; `cut`
    counted as buffers; reductions not entered). With `limit`, the walk stops once the cost exceeds
    it (rule 4 only asks whether it does: walking a whole unmaterialised recurrence for that was
    quadratic). Iterative: a long chain would exceed Python's recursion limit."""
    seen: set = set()
    total = 0
    stack = [n]
    while stack and (limit is None or total <= limit):
        x = stack.pop()
        if x in seen or x in cut or b.is_buffer(x) or x.op in (g.CONST, g.IOTA) or x.op in g.REDUCE:
            continue
        seen.add(x)
        total += P.GRAPH[x.op].cost  # the primitive's recompute cost (ember/primitives)
        stack.extend(x.srcs)
    return total


def reads_reduction(b, n) -> bool:
    """Whether n's expression inlined by builder b (up to materialised nodes) holds a reduction."""
    seen: set = set()
    stack = [n]
    while stack:
        x = stack.pop()
        if x not in seen and x not in b.M and x.op not in g.LEAVES:
            seen.add(x)
            if x.op in g.REDUCE:
                return True
            stack.extend(x.srcs)
    return False


def _varies(v: ir.Val, rvars: set) -> bool:
    """Whether value v reads anything that changes along the loop variables `rvars`."""
    for x in ir.val_toposort([v]):
        if x.op == "load":
            _, index, valid = x.args
            if (not isinstance(index, ir.Val) and sm.free_vars(index) & rvars) or sm.free_vars(valid) & rvars:
                return True
        elif x.op == "index" and sm.free_vars(x.args[0]) & rvars:
            return True
    return False


def _factors(v: ir.Val, out: list) -> None:
    """The leaves of a product tree, through float-to-float casts."""
    if v.op == "mul":
        for s in v.srcs:
            _factors(s, out)
    elif v.op == "cast" and v.dtype.is_float and v.srcs[0].dtype.is_float:
        _factors(v.srcs[0], out)
    else:
        out.append(v)


def split_invariant_factor(update: ir.Val, rvars: set, acc_dtype: dt.DType) -> tuple[ir.Val, ir.Val] | None:
    """A sum's update written as (rest, scale) with update = rest * scale and scale the same at
    every iteration of the loops over `rvars` — so sum(update) = scale * sum(rest) — when the
    scale holds every accumulator the update reads (a row statistic of an earlier stage: an
    RMSNorm's 1 / rms folded into the GEMV it feeds). The stage then no longer waits for the
    statistic: both loops run as one. The factors are multiplied in the accumulator's type; a
    float cast between them (bf16 rounding of the normalised value) is dropped: the result rounds
    less, not differently in kind. None where no such split exists."""
    leaves: list = []
    _factors(update, leaves)
    reads = [any(x.op == "acc" for x in ir.val_toposort([f])) for f in leaves]
    inv = [not _varies(f, rvars) for f in leaves]
    if not any(r and i for r, i in zip(reads, inv)) or any(r and not i for r, i in zip(reads, inv)):
        return None
    ct = acc_dtype

    def prod(fs):
        out = None
        for f in fs:
            f = f if f.dtype == ct else ir.alu("cast", ct, f)
            out = f if out is None else ir.alu("mul", ct, out, f)
        return out if out is not None else ir.const(1, ct)
    scale = [f for f, i in zip(leaves, inv) if i]
    rest = [f for f, i in zip(leaves, inv) if not i]
    return prod(rest), prod(scale)


# A short window over a cheap producer (a max pool over BatchNorm + ReLU: each element read about
# k^2 / s^2 = 2.25 times) recomputes it per read rather than storing it: ResNet-50's stem wrote its
# normalised output to a padded buffer (k2, 30 us on the H200) the pool then read back. Untimed: off
# unless EMBER_WINDOW_INLINE=1.
WINDOW_INLINE = os.environ.get("EMBER_WINDOW_INLINE", "0") == "1"
WINDOW_READS_MAX = 4  # reads per source element (view elements / source elements) of such a window
WINDOW_RECOMPUTE_LIMIT = 16  # ALU operations per element its producer may cost


def broadcast_read(b, view_numel, src) -> bool:
    """Rule 4's broadcast: a view read inside a reduction loop that reads its source at least twice
    over (a pad does not), unless it is a short window over a cheap producer (WINDOW_INLINE)."""
    if not (view_numel.is_const and src.numel.is_const):
        return True
    reads = view_numel.value / src.numel.value
    if reads < 2:
        return False
    return not (WINDOW_INLINE and reads <= WINDOW_READS_MAX and not is_contraction(src)
                and inline_cost(b, src, WINDOW_RECOMPUTE_LIMIT) <= WINDOW_RECOMPUTE_LIMIT)
