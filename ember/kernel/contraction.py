"""What a contraction is, at the graph level: one definition for the lowering (rule 5, rule 6), the
split-reduction pass (split-K) and anyone else asking. (The kernel-IR view of the same thing, with
the m/n/k roles of each loop variable, is `kernel/structure.py: contraction_of`.)"""
from __future__ import annotations

from .. import graph as g
from .. import symbolic as sm
from ..view import index_name
from .node_args import reduce_axes, view_of


def _through_casts(n: g.Node) -> g.Node:
    while n.op == g.CAST:
        n = n.srcs[0]
    return n


def product_operands(n: g.Node) -> tuple | None:
    """(a, b) when `n` is a sum of a product of two different operands (looking through casts): a
    contraction such as a matmul or a conv, not a sum of squares. Else None."""
    if n.op != g.SUM:
        return None
    x = _through_casts(n.srcs[0])
    if x.op != g.MUL or x.srcs[0] is x.srcs[1]:
        return None
    return x.srcs[0], x.srcs[1]


def is_contraction(n: g.Node) -> bool:
    return product_operands(n) is not None


def is_gemm_shaped(n: g.Node) -> bool:
    """A contraction whose two operands are each broadcast along some output axis, along different
    axes (a GEMM's shape: matmul, conv). A sum of an elementwise product (cross entropy's one-hot
    times log-probabilities) has no such axes."""
    if product_operands(n) is None:
        return False
    return broadcast_product(_through_casts(n.srcs[0]), reduce_axes(n))


def broadcast_product(x: g.Node, axes=()) -> bool:
    """Whether product x's two operands are each broadcast along some of its axes outside `axes`
    (and of extent > 1), along different ones: a GEMM's product (also one split over k into parts,
    kernel/prologue.py, where the summed axes are not known and none is left out)."""
    kept = [d for d in range(x.ndim) if d not in axes and not (x.shape[d].is_const and x.shape[d].value == 1)]

    def broadcast_axes(op: g.Node) -> set:
        op = _through_casts(op)
        if op.op != g.VIEW:
            return set()
        used = sm.free_vars(view_of(op).index)
        return {d for d in kept if index_name(d) not in used}

    a, b = (broadcast_axes(s) for s in x.srcs)
    return bool(a) and bool(b) and a != b


def gemm_rows(n: g.Node) -> int | None:
    """The rows of a GEMM-shaped contraction: the extent of the output axes its larger operand (the
    weight) is broadcast along — a decode step's batch rows; None when not static or not a GEMM."""
    if not is_gemm_shaped(n):
        return None
    x = _through_casts(n.srcs[0])
    axes = reduce_axes(n)
    kept = [d for d in range(x.ndim) if d not in axes and not (x.shape[d].is_const and x.shape[d].value == 1)]
    ops = [_through_casts(s) for s in x.srcs]
    if any(op.op != g.VIEW for op in ops):
        return None
    big = max(ops, key=lambda op: op.srcs[0].numel.vmax)  # (the views are the same shape: their sources differ)
    used = sm.free_vars(view_of(big).index)
    rows = sm.prod([x.shape[d] for d in kept if index_name(d) not in used])
    return rows.value if rows.is_const else None


def _stride(op: g.Node, d: int):
    """The step of view `op`'s source offset along its axis d (None when not a constant)."""
    idx = view_of(op).index
    x = sm.var(index_name(d), 0, None)
    step = sm.substitute(idx, {index_name(d): x + 1}) - sm.substitute(idx, {index_name(d): x})
    return step.value if step.is_const else None


def gemv_column_walk(n: g.Node) -> bool:
    """A matrix-vector contraction (one operand, the vector, is the same for every output) whose
    matrix runs contiguously along the outputs, not along the reduction: `x @ W` with W stored
    [K, N]. Its kernel puts one output per lane (cols mode), so N / 32 blocks share the whole matrix."""
    ops = product_operands(n)
    if ops is None or is_gemm_shaped(n):
        return False
    x = _through_casts(n.srcs[0])
    axes = reduce_axes(n)
    kept = [d for d in range(x.ndim) if d not in axes and not (x.shape[d].is_const and x.shape[d].value == 1)]
    if len(kept) != 1 or len(axes) != 1:
        return False
    views = [_through_casts(o) for o in ops]
    if any(v.op != g.VIEW for v in views):
        return False
    varying = [v for v in views if index_name(kept[0]) in sm.free_vars(view_of(v).index)]
    if len(varying) != 1:
        return False
    return _stride(varying[0], kept[0]) == 1 and _stride(varying[0], axes[0]) not in (0, 1)


def walks_columns(n: g.Node) -> bool:
    """A reduction into one kept axis whose inputs run contiguously along that axis, not along the
    reduction: `x @ W` over W [K, N] (gemv_column_walk), or a column sum such as a norm's weight
    gradient over every token. Its kernel puts one output per lane (cols mode), so outputs / 32
    blocks share all the rows. Judged by the expression's view leaves that vary along both the kept
    and a reduced axis: most of them unit-stride along the kept one (a heuristic: splitting such a
    reduction is correct either way)."""
    if gemv_column_walk(n):
        return True
    if n.op not in g.REDUCE or is_gemm_shaped(n):
        return False
    x = n.srcs[0]
    axes = reduce_axes(n)
    kept = [d for d in range(x.ndim) if d not in axes and not (x.shape[d].is_const and x.shape[d].value == 1)]
    if len(kept) != 1:
        return False
    along, across, seen, todo = 0, 0, set(), [x]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v.op in g.ELEMENTWISE:
            todo.extend(v.srcs)
        elif v.op == g.VIEW and v.shape == x.shape:
            used = sm.free_vars(view_of(v).index)
            if index_name(kept[0]) in used and any(index_name(a) in used for a in axes):
                if _stride(v, kept[0]) == 1:
                    along += 1
                else:
                    across += 1
        elif v.shape == x.shape:  # a buffer of the same shape, row-major: unit stride on the last axis
            if kept[0] == x.ndim - 1 or all(e.is_const and e.value == 1 for e in x.shape[kept[0] + 1:]):
                along += 1
            else:
                across += 1
    return along > across
