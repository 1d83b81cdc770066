"""Greedy decoding on CUDA one step ahead of the host.

A synchronous loop pays the host's per-step work (binding inputs, updating the decode graph's
P-reading nodes, the launch) and the GPU's step one after the other. Here the next step is queued
before the host waits for the current token: the step's input token is the previous step's `next`
output, copied on the device into a fixed input buffer, and its rotary positions come from a table
uploaded once, so the host only reads tokens back (a pinned copy and an event per step) and the
GPU never waits for Python. A sequence's stop token is seen one step late: the extra step's token
is dropped (its cache row lies past the sequence's end and is never read)."""
from __future__ import annotations

import numpy as np


def greedy_ahead(llm, b: int, L: int, start: np.ndarray, first_next, max_new_tokens: int, stats: dict):
    """Yield the (b,) int64 token ids of every step; `first_next` is the prefill's `next` output."""
    import time

    import torch
    dev = first_next.device
    prog = llm.program("decode", b)
    caches = llm._cache()
    n_dec = max(max_new_tokens - 1, 1)
    pos_table = torch.from_numpy(np.stack([L + n - start for n in range(n_dec)]).astype(np.int32)).to(dev)
    # the step's input buffers are kept per batch size: the same pointers every call, so the decode
    # graph built for them (backends/cuda_graph.py) is replayed by later calls instead of rebuilt
    held = llm.ahead_inputs
    if b not in held or held[b][0].device != dev:
        held[b] = tuple(torch.empty(shape, dtype=torch.int32, device=dev) for shape in ((b, 1), (b, 1), (b,)))
    tokens, positions, starts = held[b]
    starts.copy_(torch.from_numpy(start.astype(np.int32)))
    feed = {"tokens": tokens, "positions": positions, "start": starts}
    for i in range(llm.config.layers):
        feed[f"k{i}"], feed[f"v{i}"] = caches[2 * i][:b], caches[2 * i + 1][:b]
    host = torch.empty((max_new_tokens, b), dtype=torch.int32, pin_memory=True)

    def fetch(n: int, t):
        host[n].copy_(t.view(-1), non_blocking=True)
        ev = torch.cuda.Event()
        ev.record()
        return ev

    pending, ev = first_next, fetch(0, first_next)
    t0 = time.perf_counter()
    for n in range(max_new_tokens):
        ev_next = None
        if n + 1 < max_new_tokens:  # queue step n + 1 (it makes token n + 1) before waiting for token n
            tokens.copy_(pending.view(b, 1))
            positions.copy_(pos_table[n].view(b, 1))
            pending = prog.run(feed, dims={"P": L + n})["next"]
            ev_next = fetch(n + 1, pending)
            stats["decode_tokens"] += b
        ev.synchronize()
        stats["decode_s"] = time.perf_counter() - t0
        stop = yield host[n].numpy().astype(np.int64)
        if stop:
            return
        ev = ev_next
