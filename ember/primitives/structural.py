"""Rows of the structural primitives: the leaves (INPUT, CONST, DATA, IOTA), the reductions (SUM, MAX)
and the movement ops (VIEW, GATHER).

Their evaluation, lowering and rendering follow from their kind (a leaf is a load, a constant or an
index value; a reduction is an accumulator loop; a view is index arithmetic), so their rows carry no
numpy or C form — only what is per-op: the gradient rule, the recompute cost, the e-graph name.

Gradient rules (``g`` is the gradient arriving at the output):

==========  ===================================================================================
SUM         g broadcast back over the reduced axes
MAX         g split evenly among the positions equal to the max (as torch's amax)
GATHER      a scatter-add, built from a one-hot contraction (ember/autograd/gather.py)
VIEW        "un-viewing" (ember/autograd/unview.py)
==========  ===================================================================================
"""
from __future__ import annotations

from . import Primitive, register


def _sum_vjp(n, gn, live, kit):
    x = n.srcs[0]
    if x in live:
        yield x, kit.Tensor(gn).broadcast_to(x.shape).node


def _max_vjp(n, gn, live, kit):
    x = n.srcs[0]
    if x not in live:
        return
    Tensor, full, where = kit.Tensor, kit.full, kit.where
    X, out = Tensor(x), Tensor(n)
    # every position equal to the max shares g evenly (torch's amax). x <= max always, so
    # "not x < max" is the equality test (NaN maxima mark every position, as NaN poisons anyway)
    hit = ~(X < out.broadcast_to(x.shape))
    count = hit.cast(n.dtype).sum(n.arg, keepdim=True)
    share = (Tensor(gn) * count.reciprocal()).broadcast_to(x.shape)
    yield x, where(hit, share, full(x.shape, 0.0, x.dtype)).node


def _view_vjp(n, gn, live, kit):
    x = n.srcs[0]
    if x in live:
        yield x, kit.unview(gn, n.arg, x.shape)


def _gather_vjp(n, gn, live, kit):
    data, index = n.srcs
    if data in live:
        yield data, kit.gather_vjp(gn, data, index)


INPUT = register(Primitive("input", "leaf", 0, cost=0))
CONST = register(Primitive("const", "leaf", 0, cost=0))
DATA = register(Primitive("data", "leaf", 0, cost=0))
IOTA = register(Primitive("iota", "leaf", 0, cost=0))

SUM = register(Primitive("sum", "reduce", 1, vjp=_sum_vjp, cost=0))
MAX = register(Primitive("max", "reduce", 1, vjp=_max_vjp, cost=0))

VIEW = register(Primitive("view", "movement", 1, vjp=_view_vjp, cost=0))
GATHER = register(Primitive("gather", "movement", 2, vjp=_gather_vjp))
