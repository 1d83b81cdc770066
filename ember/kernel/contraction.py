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
    x = _through_casts(n.srcs[0])
    axes = reduce_axes(n)
    kept = [d for d in range(x.ndim) if d not in axes and not (x.shape[d].is_const and x.shape[d].value == 1)]

    def broadcast_axes(op: g.Node) -> set:
        op = _through_casts(op)
        if op.op != g.VIEW:
            return set()
        used = sm.free_vars(view_of(op).index)
        return {d for d in kept if index_name(d) not in used}

    a, b = (broadcast_axes(s) for s in x.srcs)
    return bool(a) and bool(b) and a != b
