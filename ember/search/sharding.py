"""Choosing a sharding: a search over annotations, each candidate priced by the graph ember.sharding
makes of it (docs/distributed.md).

    specs, report = plan_sharding([y], [w1, w2, w3], world=2)      # {w1: 0, w2: 1, ...}

Every candidate leaf may stay replicated or be split along any axis the ranks divide. A plan's
price is one rank's step under a bandwidth model (every rank runs the same graph shape):

    time = (bytes of the rank's constants and inputs) / memory bandwidth
         + sum over its collectives of (latency + bytes moved / link bandwidth)

(all-reduce moves 2 (W-1)/W of its tensor per rank, all-gather (W-1)/W of its result) — the terms
that decide a memory-bound step such as a decode. The search is coordinate descent from "all
replicated": each leaf in turn (largest first) takes a choice that lowers the price, and when no
single change helps, each pair of leaves (a row-split matmul pays off only with its column-split
partner), until a round changes nothing. Deterministic (no timing), so every rank of a process group finds the same
plan on its own. With the H100's numbers it finds Megatron's plan for an MLP and an attention block
at Llama sizes, and keeps a small block replicated (its collectives cost more than its weights)."""
from __future__ import annotations

from dataclasses import dataclass

from .. import graph as g
from .. import symbolic as sm
from ..sharding import shard_graph


@dataclass(frozen=True)
class LinkModel:
    memory_bandwidth: float = 3.0e12  # bytes/s a rank reads its weights at (H100 HBM3, measured copy rate)
    link_bandwidth: float = 1.5e11  # bytes/s a collective moves per rank (NVLink, NCCL bus rate at small sizes)
    latency: float = 10e-6  # s per collective (bench/results/tp-2026-11-25.json: ~12 us per 4 KB all-reduce)


def _bytes(n) -> float:
    size = sm.sym(sm.prod(n.shape))
    return float(size.value if size.is_const else 0) * n.dtype.itemsize


def price(outputs: list, specs: dict, world: int, model: LinkModel = LinkModel(), dim_bounds=None) -> dict:
    """One rank's modelled step time (s) for a plan, with its parts."""
    local, _, _ = shard_graph(outputs, specs, 0, world, dim_bounds=dim_bounds)
    order = g.toposort(local)
    read = sum(_bytes(n) for n in order if n.op in (g.DATA, g.INPUT))
    comm, count = 0.0, 0
    for n in order:
        if n.op == g.COLLECTIVE:
            count += 1
            share = 2 * (world - 1) / world if n.arg.startswith("all_reduce") else (world - 1) / world
            comm += model.latency + share * _bytes(n) / model.link_bandwidth
    return {"seconds": read / model.memory_bandwidth + comm, "bytes_read": read, "collectives": count,
            "collective_seconds": comm}


def plan_sharding(outputs: list, leaves: list, world: int, model: LinkModel = LinkModel(), dim_bounds=None,
                  rounds: int = 4) -> tuple:
    """(specs {leaf node: axis}, report) minimising `price` over the leaves' choices."""
    outputs = [getattr(o, "node", o) for o in outputs]
    leaves = sorted({getattr(x, "node", x) for x in leaves}, key=_bytes, reverse=True)
    for n in leaves:
        if n.op not in (g.DATA, g.INPUT):
            raise ValueError(f"only constants and inputs can be sharded, not a {n.op} node")
    choices = {n: [None] + [a for a, s in enumerate(n.shape)
                            if sm.sym(s).is_const and sm.sym(s).value % world == 0 and sm.sym(s).value >= world]
               for n in leaves}
    specs: dict = {}
    best = price(outputs, specs, world, model, dim_bounds)
    tried = 1

    def with_(base: dict, moves: tuple) -> dict:
        out = {k: v for k, v in base.items() if all(k is not n for n, _ in moves)}
        out.update({n: c for n, c in moves if c is not None})
        return out

    # single moves, then pairs when no single move helps (a row-split matmul pays off only together
    # with its column-split partner: alone, it adds a collective and its partner is still read whole)
    for _ in range(rounds):
        changed = False
        for size in (1, 2):
            moves = [((n, c),) for n in leaves for c in choices[n] if specs.get(n) != c] if size == 1 else \
                [((n, c), (m, d)) for i, n in enumerate(leaves) for m in leaves[i + 1:]
                 for c in choices[n] for d in choices[m] if specs.get(n) != c and specs.get(m) != d]
            for mv in moves:
                trial = with_(specs, mv)
                p = price(outputs, trial, world, model, dim_bounds)
                tried += 1
                if p["seconds"] < best["seconds"] * (1 - 1e-9):
                    specs, best, changed = trial, p, True
            if changed:
                break
        if not changed:
            break
    return specs, dict(best, plans_priced=tried)
