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

from .. import graph as g
from .. import primitives as P
from .. import symbolic as sm
from .contraction import is_contraction

FEW_ROWS = 4  # operand rows (M) of a contraction that recomputes its broadcast operand
FEW_MIN_BROADCAST = 64  # ... each operand element being read by at least this many outputs
RECOMPUTE_FEW = 16  # ALU operations per element such a recomputed operand may cost


def few_row_recompute(b, view_numel, src, scoords, limit: int) -> set | None:
    """For builder b reading src (at scoords, inside a reduction loop) through a broadcasting view
    of view_numel elements: None when rule 4 applies (materialise src); else the set of nodes to
    materialise so that src is cheap to recompute per output (often empty)."""
    if b.local or not b.stage_nodes or not is_contraction(b.stage_nodes[-1]):
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
