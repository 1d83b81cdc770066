"""SDPA on the CPU: the streamed one-pass form (codegen/c_online.py) against the default three kernels
and torch (min of 5 calls, ms; per form (ms, kernels); err = max |online - torch|).

    python bench/attention_cpu.py
"""
from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

sys.path.insert(0, ".")

CASES = [(1, 8, 1024, 64, "float32", True), (1, 8, 1024, 64, "bfloat16", True), (2, 4, 300, 128, "float32", False),
         (1, 8, 2048, 64, "float32", True)]


def best(fn, n=5) -> float:
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3


def main():
    import torch

    import ember as em
    from ember.backends.cpu_target import online_softmax
    from ember.backends.target import get_target
    from ember.ops.attention import scaled_dot_product_attention
    host = get_target("cpu")
    for B, H, L, D, dtn, causal in CASES:
        dtype = getattr(em, dtn)
        q, k, v = (em.input(n, (B, H, L, D), dtype) for n in "qkv")
        o = scaled_dot_product_attention(q, k, v, is_causal=causal)
        rng = np.random.default_rng(0)
        tins = {n: torch.from_numpy(rng.standard_normal((B, H, L, D)).astype(np.float32)).to(getattr(torch, dtn))
                for n in "qkv"}
        res = {}
        for name, tg in (("online", dataclasses.replace(host, online_softmax=online_softmax)), ("3kernels", host)):
            p = em.compile(o, device=tg)
            out = p(**tins)
            res[name] = (round(best(lambda: p(**tins)), 2), len(p.launches), np.asarray(out).astype(np.float32))
        ref = torch.nn.functional.scaled_dot_product_attention(tins["q"], tins["k"], tins["v"], is_causal=causal)
        t_torch = best(lambda: torch.nn.functional.scaled_dot_product_attention(tins["q"], tins["k"], tins["v"],
                                                                                 is_causal=causal))
        err = float(np.abs(res["online"][2] - ref.float().numpy()).max())
        print((B, H, L, D, dtn, causal), {n: r[:2] for n, r in res.items()}, "torch", round(t_torch, 2), "err", err)


if __name__ == "__main__":
    main()
