"""Checks that search="fast" on a bf16 causal SDPA runs (flash kernels among its candidates), is correct, and times it."""
import sys
import json
import time
sys.path.insert(0, ".")
import torch
import ember as em
from ember.ops.attention import scaled_dot_product_attention
q, k, v = (em.input(n, (2, 8, 1024, 128), em.bfloat16) for n in "qkv")
o = scaled_dot_product_attention(q, k, v, is_causal=True)
t0 = time.time()
p = em.compile(o, device="cuda", search="fast", time_limit=30)
tq = {n: torch.randn(2, 8, 1024, 128, device="cuda", dtype=torch.bfloat16) for n in "qkv"}
got = p(**tq).double()
ref = torch.nn.functional.scaled_dot_product_attention(*(tq[n].double() for n in "qkv"), is_causal=True)
print(json.dumps({"search_fast_sdpa": {"modes": [l.config.get("cfg") for l in p.launches], "s": round(time.time() - t0, 1),
      "max_err": float((got - ref).abs().max()), "us": p.benchmark(reps=10, **tq)}}))
