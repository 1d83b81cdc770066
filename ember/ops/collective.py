"""Collectives in the Tensor API: a sharded program's values combined across its ranks.

    y_partial = x_shard @ w_rows.T            # this rank's slice of the contraction
    y = em.all_reduce(y_partial)              # the full product on every rank
    logits = em.all_gather(logits_shard, -1)  # vocab-parallel logits, whole again

The world size defaults to the process's communicator's (ember/comm.py: ember.distributed.init()
sets it; 1 without it, where both are the identity). The primitive and its rules:
ember/primitives/collective.py; how the ranks run: docs/distributed.md."""
from __future__ import annotations

from .. import graph as g
from ..comm import current
from ..tensor import ShapeError, Tensor

__all__ = ["all_reduce", "all_gather"]


def all_reduce(x: Tensor, world: int | None = None) -> Tensor:
    """The elementwise sum of x over the ranks."""
    return Tensor(g.collective_node(x.node, "all_reduce", current().world if world is None else world))


def all_gather(x: Tensor, axis: int = -1, world: int | None = None) -> Tensor:
    """The ranks' x concatenated along `axis`, in rank order. (The primitive concatenates along axis
    0, as NCCL lays it out: another axis is moved there and back by views.)"""
    w = current().world if world is None else world
    ax = axis + x.ndim if axis < 0 else axis
    if not 0 <= ax < x.ndim:
        raise ShapeError(f"all_gather: axis {axis} out of range for rank {x.ndim}")
    order = [ax] + [d for d in range(x.ndim) if d != ax]
    moved = x.permute(*order) if ax else x
    y = Tensor(g.collective_node(moved.node, "all_gather", w))
    return y.permute(*[order.index(d) for d in range(x.ndim)]) if ax else y
