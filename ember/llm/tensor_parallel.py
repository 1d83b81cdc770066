"""Megatron tensor parallelism by annotation: the whole model's step graph (llm/model.py, its q/k/v
laid out in rank groups) split by ember.sharding from one annotation per weight and cache — the
alternative to the graph written per rank (`load(..., sharding="propagate")`, docs/distributed.md).

Rows (the output features) of q/k/v, gate and up are split, and columns (the input features) of o
and down, so the propagation finds Megatron's plan: heads and MLP columns stay on their rank, the o
and down products are partial sums all-reduced once each; the embedding and LM head are split by
vocabulary rows (the embedding's gather a partial sum, the logits gathered); the KV caches by head."""
from __future__ import annotations

from .. import symbolic as sm
from ..ops.state import StateWriteSpec
from ..sharding import R, S, shard_graph
from ..tensor import Tensor, input
from .model import Weights, cache_shape

ROWS, COLUMNS = 0, 1
LAYER_SPLITS = {"qkv": ROWS, "qkv_b": ROWS, "gate": ROWS, "up": ROWS, "gate_b": ROWS, "up_b": ROWS,
                "o": COLUMNS, "down": COLUMNS}


def annotations(W: Weights, writes: list) -> dict:
    """{tensor: split axis} for the weights and the caches (axis 1: kv heads)."""
    specs = {W.embed: ROWS, W.lm_head: ROWS}
    for L in W.layers:
        specs.update({L[k]: axis for k, axis in LAYER_SPLITS.items() if k in L})
    specs.update({w.state: 1 for w in writes})
    return specs


def shard_step(W: Weights, outs: dict, writes: list, rank: int, world: int) -> tuple:
    """This rank's (outputs, state writes) of a whole-model step graph."""
    roots = [t.node for t in outs.values()] + [w.updated.node for w in writes]
    kept = [w.updated.node for w in writes]
    max_seq = writes[0].state.node.shape[2].value
    local, layouts, _ = shard_graph(roots, annotations(W, writes), rank, world, keep_outputs=kept,
                                    dim_bounds={"P": max_seq - 1, "T": max_seq, sm.dim("P") + sm.dim("T"): max_seq})
    n = len(outs)
    for w, lay in zip(writes, layouts[n:]):
        if lay != S(1):  # (the propagation must keep each cache split by head, as it is stored)
            raise AssertionError(f"the write into {w.state.node.arg} came out {lay}, not split by head")
    assert all(lay == R for lay in layouts[:n])
    new_writes = []
    for w, node in zip(writes, local[n:]):
        state = input(w.state.node.arg, cache_shape(W.cfg, w.state.node.shape[0].value, w.state.node.shape[2], world),
                      W.dtype)
        new_writes.append(StateWriteSpec(state, Tensor(node), w.axis, w.start, w.extent))
    return {k: Tensor(node) for k, node in zip(outs, local[:n])}, new_writes
