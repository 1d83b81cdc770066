"""SDPA on the CPU: the streamed one-pass form (codegen/c_online.py) against the default three kernels and torch
(min of 5 calls, ms; (ms, kernels) per form; err = max |online - torch|).  python bench/attention_cpu.py"""
import numpy as np, time, sys, torch
import ember as em
from ember.ops.attention import scaled_dot_product_attention
from ember.backends.target import get_target
import dataclasses
for (B,H,L,D,dtn,causal) in [(1,8,1024,64,"float32",True),(1,8,1024,64,"bfloat16",True),(2,4,300,128,"float32",False),(1,8,2048,64,"float32",True)]:
    dtype = getattr(em, dtn)
    q = em.input("q", (B,H,L,D), dtype); k = em.input("k", (B,H,L,D), dtype); v = em.input("v", (B,H,L,D), dtype)
    o = scaled_dot_product_attention(q, k, v, is_causal=causal)
    rng = np.random.default_rng(0)
    ins = {n: rng.standard_normal((B,H,L,D)).astype(np.float32) for n in "qkv"}
    tins = {n: torch.from_numpy(a).to(getattr(torch, dtn)) for n, a in ins.items()}
    ins2 = {n: t.numpy() if dtn=="float32" else t for n,t in tins.items()}
    t = get_target("cpu")
    res = {}
    from ember.backends.cpu_target import online_softmax as hook
    for name, tg in (("online", dataclasses.replace(t, online_softmax=hook)), ("3kernels", t)):
        p = em.compile(o, device=tg)
        p(**tins)
        ts=[]
        for _ in range(5):
            t0=time.perf_counter(); out = p(**tins); ts.append(time.perf_counter()-t0)
        res[name] = (min(ts)*1e3, len(p.launches), np.asarray(out).astype(np.float32))
    tt=[]
    for _ in range(5):
        t0=time.perf_counter(); ref = torch.nn.functional.scaled_dot_product_attention(tins["q"],tins["k"],tins["v"],is_causal=causal); tt.append(time.perf_counter()-t0)
    err = np.abs(res["online"][2]-ref.float().numpy()).max()
    print((B,H,L,D,dtn,causal), {k:(round(v[0],2),v[1]) for k,v in res.items()}, "torch", round(min(tt)*1e3,2), "err", err)
