"""Sums of contractions, distributed: sum(a*b + c*d) -> sum(a*b) + sum(c*d) where each product is
contraction-shaped (kernel/contraction.py: `is_gemm_shaped`).

Reverse-mode autograd adds the gradients of a tensor read by several matmuls where they meet: at
the broadcast view the matmuls share, before the view's gradient (a sum) reduces them. A SwiGLU
MLP's input gradient is so `sum(g_gate * W_gate + g_up * W_up)` over the hidden axis, and q/k/v's
is a sum of three such products. As one reduction it is no contraction (the update is an add of
products), so it ran as plain loops: two such kernels were 7.1 of a 2-layer transformer training
step's 17.7 ms on the 2-core Zen 4 (bench/train_profile.py). Distributed, each term is a GEMM (the
packed form on the CPU, tensor cores on CUDA) and the last add fuses into the last one's epilogue.
The sum's terms are reassociated (as the search's `sum-linear` rule does; within float tolerance).
"""
from __future__ import annotations

from .. import graph as g
from .contraction import is_gemm_shaped
from .node_args import reduce_axes


def _terms(n: g.Node) -> list:
    """The leaves of an ADD tree (n itself when it is no ADD)."""
    if n.op != g.ADD:
        return [n]
    return _terms(n.srcs[0]) + _terms(n.srcs[1])


def _distributed(n: g.Node) -> g.Node | None:
    if n.op != g.SUM or n.srcs[0].op != g.ADD:
        return None
    axes = tuple(reduce_axes(n))
    sums = [g.reduce_node(g.SUM, t, axes, tf32=g.is_tf32(n)) for t in _terms(n.srcs[0])]
    gemms = [s for s in sums if is_gemm_shaped(s)]
    if len(gemms) < 2:
        return None
    rest = [t for t, s in zip(_terms(n.srcs[0]), sums) if not is_gemm_shaped(s)]
    parts = gemms
    if rest:  # the terms that are no contraction stay one reduction
        acc = rest[0]
        for t in rest[1:]:
            acc = g.binary(g.ADD, acc, t)
        parts = [g.reduce_node(g.SUM, acc, axes, tf32=g.is_tf32(n))] + gemms
    out = parts[0]
    for p in parts[1:]:
        out = g.binary(g.ADD, out, p)
    return out


def distribute_sums(outputs: list) -> list:
    """The graph with every sum of two or more contraction-shaped products distributed over them
    (the same nodes where there is none)."""
    new: dict = {}
    for n in g.toposort(outputs):
        srcs = tuple(new.get(s, s) for s in n.srcs)
        m = n if srcs == n.srcs else g.Node(n.op, srcs, n.arg, n.dtype, n.shape)
        new[n] = _distributed(m) or m
    return [new[o] for o in outputs]
