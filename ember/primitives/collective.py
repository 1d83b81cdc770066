"""The collective primitive: a value combined across the ranks of a sharded program.

One row, COLLECTIVE, whose argument says which collective (parsed by `parse`):

==========================  =====================================================================
``all_reduce/W``            the elementwise sum over the W ranks (a row-parallel matmul's partial
                            products: each rank holds the product of its slice of the contraction)
``all_gather/W``            the W ranks' tensors concatenated along axis 0, in rank order (NCCL's
                            layout; em.all_gather along another axis moves it first, with views)
==========================  =====================================================================

A collective is never fused: the lowering materialises it and its source, and it runs between
kernels as a step of its own (NCCL on the GPU, ember/backends/nccl.py; the process's communicator on
the CPU and in the reference, ember/comm.py).

Gradient rules, for a per-rank graph whose loss is the same on every rank (Megatron's convention):
all_reduce passes the gradient through unchanged (each rank's partial product contributed with
weight one); all_gather hands each rank the slice of the gradient its own shard produced. Both need
the ranks' own index, which the rule takes from the process's communicator.
"""
from __future__ import annotations

from typing import NamedTuple

from . import GraphError, Primitive, register


class CollectiveOp(NamedTuple):
    kind: str  # "all_reduce" | "all_gather"
    world: int

    def text(self) -> str:
        return f"{self.kind}/{self.world}"


def parse(arg: str) -> CollectiveOp:
    kind, _, world = str(arg).partition("/")
    if kind in ("all_reduce", "all_gather") and world.isdigit() and int(world) >= 1:
        return CollectiveOp(kind, int(world))
    raise GraphError(f"bad collective {arg!r} (all_reduce/W or all_gather/W)")


def _collective_vjp(n, gn, live, kit):
    x = n.srcs[0]
    if x not in live:
        return
    op = parse(n.arg)
    if op.kind == "all_reduce":
        yield x, gn
        return
    from ..comm import require
    rank, size = require(op.world).rank, x.shape[0]
    yield x, kit.Tensor(gn)[rank * size:(rank + 1) * size].node


COLLECTIVE = register(Primitive("collective", "collective", 1, vjp=_collective_vjp, cost=0))
