"""Attention on the GPU (issue 20): correctness of Ember's streamed (flash) attention against a float64
oracle on odd shapes, then prefill throughput against torch's SDPA (flash backend and its default),
eager (matmul-softmax-matmul) and torch.compile, in one run on one GPU.

    python bench/attention.py --out bench/results/attention-DATE.json [--quick] [--check-only]

FLOPs counted as 4 * B * H * L * S * D (halved for causal), as FlashAttention's benchmarks do.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

sys.path.insert(0, ".")
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from contractions import graph_timed, timed  # noqa: E402  (bench/contractions.py: CUDA-event timing)


def unstreamed():
    """The CUDA target without the online-softmax hook: attention as three kernels (the old default)."""
    import dataclasses

    from ember import pipeline
    return dataclasses.replace(pipeline.get_target("cuda"), online_softmax=None)


def ember_sdpa(B, H, Hkv, L, S, D, dtype, causal, cfg=None):
    """Ember's program for SDPA; `cfg` overrides the flash kernel's schedule (a variant); cfg
    "unstreamed": three kernels."""
    import ember as em
    from ember.ops.attention import scaled_dot_product_attention
    q = em.input("q", (B, H, L, D), dtype)
    k = em.input("k", (B, Hkv, S, D), dtype)
    v = em.input("v", (B, Hkv, S, D), dtype)
    o = scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=Hkv != H)
    return _program(o, cfg, "flash")


def ember_decode(B, Hkv, G, S, D, cfg=None):
    """One new token per sequence against S cached keys, GQA as the LLM runtime writes it: the G query
    heads of a kv head are G rows against that head's keys (no repeated cache)."""
    import ember as em
    q = em.input("q", (B, Hkv, G, 1, D), em.bfloat16)
    k = em.input("k", (B, Hkv, S, D), em.bfloat16)
    v = em.input("v", (B, Hkv, S, D), em.bfloat16)
    s = (q @ k.unsqueeze(2).transpose(-1, -2)).cast(em.float32) * (1.0 / math.sqrt(D))
    o = s.softmax(-1).cast(em.bfloat16) @ v.unsqueeze(2)
    return _program(o, cfg, "decode")


def em_decode_node(B, Hkv, G, S, D):
    """The graph of one decode attention (as ember_decode builds it), for its default schedule."""
    import ember as em
    q = em.input("q", (B, Hkv, G, 1, D), em.bfloat16)
    k = em.input("k", (B, Hkv, S, D), em.bfloat16)
    v = em.input("v", (B, Hkv, S, D), em.bfloat16)
    s = (q @ k.unsqueeze(2).transpose(-1, -2)).cast(em.float32) * (1.0 / math.sqrt(D))
    return (s.softmax(-1).cast(em.bfloat16) @ v.unsqueeze(2)).node


def ember_decode_layers(N, B, Hkv, G, S, D, cfg=None):
    """N independent decode attentions in one program (one kernel each, one CUDA graph), as a
    decode step runs one per layer: each over its own cache, so nothing is read from L2 twice."""
    import ember as em
    outs = []
    for i in range(N):
        q = em.input(f"q{i}", (B, Hkv, G, 1, D), em.bfloat16)
        k = em.input(f"k{i}", (B, Hkv, S, D), em.bfloat16)
        v = em.input(f"v{i}", (B, Hkv, S, D), em.bfloat16)
        s = (q @ k.unsqueeze(2).transpose(-1, -2)).cast(em.float32) * (1.0 / math.sqrt(D))
        outs.append(s.softmax(-1).cast(em.bfloat16) @ v.unsqueeze(2))
    if cfg is None:
        return em.compile(tuple(outs), device="cuda")
    from ember import pipeline
    target = pipeline.get_target("cuda")
    lowered = pipeline.lower([o.node for o in outs], None, target)
    cfgs = [dict(cfg) if target.default_config(k, target).get("mode") == "decode" else target.default_config(k, target)
            for k, _ in lowered.kernels]
    return pipeline.build_program(lowered, target, None, "tuple", configs=cfgs)


def layers_error(outs, qs, ks, vs) -> float:
    """Max abs error of every layer's output of ember_decode_layers against torch's SDPA."""
    import torch
    F = torch.nn.functional
    err = 0.0
    for o, q, k, v in zip(outs, qs, ks, vs):
        B, Hkv, G, _, D = q.shape
        want = F.scaled_dot_product_attention(q.reshape(B, Hkv * G, 1, D), k, v, enable_gqa=True)
        err = max(err, float((o.reshape(B, Hkv * G, 1, D).float() - want.float()).abs().max()))
    return err


def decode_layer_inputs(N, B, Hkv, G, S, D) -> tuple:
    """(qs, ks, vs, feed): N layers' random bf16 q rows and caches on the GPU (seed 0), and the feed
    of ember_decode_layers' program."""
    import torch
    torch.manual_seed(0)
    qs = [torch.randn(B, Hkv, G, 1, D, device="cuda").bfloat16() for _ in range(N)]
    ks = [torch.randn(B, Hkv, S, D, device="cuda").bfloat16() for _ in range(N)]
    vs = [torch.randn(B, Hkv, S, D, device="cuda").bfloat16() for _ in range(N)]
    feed = {**{f"q{i}": qs[i] for i in range(N)}, **{f"k{i}": ks[i] for i in range(N)},
            **{f"v{i}": vs[i] for i in range(N)}}
    return qs, ks, vs, feed


DECODE_CASES = [(1, 8, 4, 8192, 128), (1, 8, 4, 8192, 64), (4, 8, 4, 8192, 128), (1, 8, 4, 32768, 128)]
DECODE_GRID = {"warps": [4], "BN": [16, 32], "stages": [2, 4],
               "cluster_splits": [[8, 1], [16, 1], [8, 2], [4, 2], [4, 4], [2, 8], [1, 16], [8, 4]]}


def bench_decode_layers(out: dict, N: int = 16, variants: bool = False, prefetch_ab: bool = False) -> None:
    """Decode attention timed as in a decode step: N of them back to back in one graph replay (a
    lone kernel's replay costs ~5-6 us whatever it reads, which caps any one-kernel measurement at
    8K keys far below the floor). Per attention: the replay's time / N; SDPA the same way."""
    import torch
    F = torch.nn.functional
    bw = copy_bandwidth()
    out["copy_GBps"] = round(bw / 1e9, 1)
    rows = []
    for B, Hkv, G, S, D in DECODE_CASES:
        qs, ks, vs, feed = decode_layer_inputs(N, B, Hkv, G, S, D)
        nbytes = 2 * ks[0].numel() * 2
        prog = ember_decode_layers(N, B, Hkv, G, S, D)
        got = prog(**feed)
        want = F.scaled_dot_product_attention(qs[0].reshape(B, Hkv * G, 1, D), ks[0], vs[0], enable_gqa=True)
        err = layers_error(got, qs, ks, vs)
        ember_us = prog.benchmark(reps=20, **feed) / N
        qh = [q.reshape(B, Hkv * G, 1, D) for q in qs]
        sdpa_us = graph_timed(lambda qh=qh, ks=ks, vs=vs: [F.scaled_dot_product_attention(
            qh[i], ks[i], vs[i], enable_gqa=True) for i in range(N)]) / N
        row = dict(B=B, Hkv=Hkv, G=G, S=S, D=D, layers=N, kernels=len(prog.launches), max_err=err, ok=err < 2e-2,
                   ember_us=round(ember_us, 2), sdpa_us=round(sdpa_us, 2), cfg=prog.launches[0].config.get("cfg"),
                   ember_pct_copy_bw=round(100 * nbytes / (ember_us * 1e-6) / bw, 1),
                   sdpa_pct_copy_bw=round(100 * nbytes / (sdpa_us * 1e-6) / bw, 1))
        if prefetch_ab:  # the default schedule with and without its K / V rows asked of L2 before the wait
            from ember import pipeline
            target = pipeline.get_target("cuda")
            lowered = pipeline.lower([em_decode_node(B, Hkv, G, S, D)], None, target)
            base = next(target.default_config(k, target) for k, _ in lowered.kernels
                        if target.default_config(k, target).get("mode") == "decode")
            for name, extra in [(f"kv_prefetch{pf}", {"kv_prefetch": pf}) for pf in (0, 1, 16384, 65536)] + \
                    [("half_rows1", {"half_rows": 1}), ("lazy_rescale1", {"lazy_rescale": 1}),
                     ("half_rows1_lazy1", {"half_rows": 1, "lazy_rescale": 1})]:
                p2 = ember_decode_layers(N, B, Hkv, G, S, D, dict(base, **extra))
                e2 = float((p2(**feed)[0].reshape(B, Hkv * G, 1, D).float() - want.float()).abs().max())
                us = p2.benchmark(reps=20, **feed) / N
                row[name] = dict(us=round(us, 2), pct=round(100 * nbytes / (us * 1e-6) / bw, 1), ok=e2 < 2e-2)
                print(" ", name, row[name], flush=True)
        if variants:  # the decode schedule's knobs under the same protocol
            gr = DECODE_GRID
            for cfg in [{"mode": "decode", "warps": w, "BN": bn, "stages": st, "cluster": c, "splits": p, "kt": kt, "affine": af,
                         "bulk": int(bu == 1), "tma": int(bu == "tma"), "gather": ga, "pipe": pp, "steal": sl, "l2_ahead": l2, **({} if ea is None else {"early_keys": ea})}
                        for w in gr["warps"] for bn in gr["BN"] for st in gr["stages"]
                        for c, p in gr["cluster_splits"] for kt in gr.get("kt", [0]) for af in gr.get("affine", [0])
                        for bu in gr.get("bulk", [0]) for ga in gr.get("gather", [0]) for ea in gr.get("early_keys", [None]) for pp in gr.get("pipe", [0]) for sl in gr.get("steal", [0]) for l2 in gr.get("l2_ahead", [0])]:
                name = f"w{cfg['warps']}_bn{cfg['BN']}_s{cfg['stages']}_c{cfg['cluster']}_p{cfg['splits']}" + \
                    (f"_kt{cfg['kt']}" if cfg["kt"] else "") + ("_af" if cfg["affine"] else "") + ("_bulk" if cfg["bulk"] else "") + ("_tma" if cfg["tma"] else "") + \
                    (("_gather" + ("2" if cfg["gather"] == 2 else "")) if cfg["gather"] else "") + (f"_e{cfg['early_keys']}" if "early_keys" in cfg else "") + ("_pipe" if cfg["pipe"] else "") + (f"_steal{'' if cfg['steal'] == 1 else cfg['steal']}" if cfg["steal"] else "") + \
                    (f"_l2{cfg['l2_ahead'] // 1024}k" if cfg["l2_ahead"] else "")
                try:
                    p2 = ember_decode_layers(N, B, Hkv, G, S, D, cfg)
                    e2 = layers_error(p2(**feed), qs, ks, vs)  # (every layer: all but the first may load keys early)
                    us = p2.benchmark(reps=10, **feed) / N
                    row[name] = dict(us=round(us, 2), pct=round(100 * nbytes / (us * 1e-6) / bw, 1), ok=e2 < 2e-2)
                except Exception as e:  # noqa: BLE001
                    row[name] = dict(error=str(e)[:160])
            best = max((k_ for k_ in row if isinstance(row[k_], dict) and row[k_].get("ok")),
                       key=lambda k_: row[k_]["pct"], default=None)
            row["best_variant"] = best and dict(row[best], name=best)
        print("decode-layers", json.dumps({k_: v_ for k_, v_ in row.items() if not (isinstance(v_, dict) and "us" in v_)}),
              flush=True)
        rows.append(row)
        del qs, ks, vs, feed, prog
        torch.cuda.empty_cache()
    out["decode_layers"] = rows


def bench_masked(out: dict) -> None:
    """SDPA with a boolean key-padding mask [B, 1, L, S] (each sequence its own length) or the
    same mask additive, bf16, against torch's SDPA with the same mask (its default backend; the
    flash backend takes no mask) in the same run. Ember: the mask's "row has a key" reduction and
    one flash kernel."""
    import numpy as np
    import torch
    import ember as em
    F = torch.nn.functional
    rows = []
    for B, H, L, D, kind in [(4, 32, 4096, 128, "bool"), (4, 32, 1024, 64, "bool"), (4, 32, 4096, 128, "additive")]:
        q = em.input("q", (B, H, L, D), em.bfloat16)
        k, v = (em.input(n, (B, H, L, D), em.bfloat16) for n in "kv")
        m = em.input("m", (B, 1, L, L), em.bool_ if kind == "bool" else em.bfloat16)
        prog = em.compile(em.scaled_dot_product_attention(q, k, v, attn_mask=m), device="cuda")
        torch.manual_seed(0)
        tq, tk, tv = (torch.randn(B, H, L, D, device="cuda").bfloat16() for _ in range(3))
        lens = torch.tensor(np.linspace(L // 2, L, B).astype(np.int64), device="cuda")
        keep = (torch.arange(L, device="cuda")[None, :] < lens[:, None])[:, None, None, :].expand(B, 1, L, L).contiguous()
        tm = keep if kind == "bool" else torch.where(keep, 0.0, float("-inf")).bfloat16()
        got = prog(q=tq, k=tk, v=tv, m=tm)
        want = F.scaled_dot_product_attention(tq.float(), tk.float(), tv.float(), attn_mask=tm if kind == "bool" else tm.float())
        err = float((got.float() - want).abs().max())
        us = prog.benchmark(reps=10, q=tq, k=tk, v=tv, m=tm)
        sdpa_us = graph_timed(lambda: F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm))
        flops = 4 * B * H * L * L * D  # (as if no key were masked: the same count for both sides)
        row = dict(B=B, H=H, L=L, D=D, mask=kind, modes=[l.config.get("mode") for l in prog.launches], max_err=err,
                   ok=err < 2e-2, ember_us=round(us, 1), sdpa_us=round(sdpa_us, 1),
                   ember_tflops=round(flops / us / 1e6, 1), sdpa_tflops=round(flops / sdpa_us / 1e6, 1),
                   ember_vs_sdpa=round(sdpa_us / us, 3))
        for cfg in MASKED_VARIANTS:  # --variants: flash schedules under the same protocol
            name = "w{warps}_bn{BN}".format(**cfg)
            try:
                p2 = _program(em.scaled_dot_product_attention(q, k, v, attn_mask=m), dict(cfg, mode="flash"), "flash")
                e2 = float((p2(q=tq, k=tk, v=tv, m=tm).float() - want).abs().max())
                u2 = p2.benchmark(reps=10, q=tq, k=tk, v=tv, m=tm)
                row[name] = dict(us=round(u2, 1), tflops=round(flops / u2 / 1e6, 1), ok=e2 < 2e-2)
            except Exception as e:  # noqa: BLE001
                row[name] = dict(error=str(e)[:160])
        print("masked", json.dumps(row), flush=True)
        rows.append(row)
        torch.cuda.empty_cache()
    out["masked"] = rows


def _program(o, cfg, mode: str):
    """o compiled for the GPU: the default (cfg None), three kernels ("unstreamed"), or with `cfg`
    replacing the schedule of its kernels in `mode` (a variant)."""
    import ember as em
    from ember import pipeline
    if cfg is None or cfg == "unstreamed":
        return em.compile(o, device="cuda" if cfg is None else unstreamed())
    target = pipeline.get_target("cuda")
    lowered = pipeline.lower([o.node], None, target)
    cfgs = [target.default_config(k, target) for k, _ in lowered.kernels]
    cfgs = [dict(cfg) if c.get("mode") == mode else c for c in cfgs]
    return pipeline.build_program(lowered, target, None, "single", configs=cfgs)


def oracle(q, k, v, causal):
    """float64 softmax(q k^T / sqrt(d) + causal mask) v, with GQA heads repeated; top-left causal."""
    import torch
    q, k, v = (t.double() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return s.softmax(-1) @ v


def check(out: dict) -> bool:
    import torch
    import ember as em
    ok = True
    cases = [(1, 2, 2, 300, 300, 64, "bfloat16", True), (2, 4, 4, 100, 100, 128, "float16", False),
             (1, 4, 2, 257, 257, 64, "bfloat16", True), (1, 2, 2, 17, 1000, 128, "bfloat16", False),
             (2, 3, 3, 1000, 1000, 64, "float16", True), (1, 8, 1, 129, 129, 128, "bfloat16", True),
             (1, 2, 2, 64, 64, 64, "bfloat16", False), (1, 1, 1, 4096, 4096, 128, "bfloat16", True)]
    rows = []
    for seed, (B, H, Hkv, L, S, D, dtn, causal) in enumerate(cases):
        torch.manual_seed(seed)
        tdt = getattr(torch, dtn)
        q, k, v = (torch.randn(B, h, n, D, device="cuda").to(tdt) for h, n in ((H, L), (Hkv, S), (Hkv, S)))
        try:
            prog = ember_sdpa(B, H, Hkv, L, S, D, getattr(em, dtn), causal)
            modes = [l.config.get("mode") for l in prog.launches]
            got = prog(q=q, k=k, v=v)
            got = (got[0] if isinstance(got, (list, tuple)) else got).double()
            want = oracle(q, k, v, causal)
            err = float((got - want).abs().max())
            tol = 2e-2 if dtn == "bfloat16" else 4e-3
            good = bool(err <= tol * max(1.0, float(want.abs().max())))
            # torch's own SDPA error, for scale
            ref = torch.nn.functional.scaled_dot_product_attention(
                q, k.repeat_interleave(H // Hkv, 1), v.repeat_interleave(H // Hkv, 1), is_causal=causal)
            terr = float((ref.double() - want).abs().max())
            row = dict(shape=[B, H, Hkv, L, S, D], dtype=dtn, causal=causal, modes=modes, max_err=err,
                       torch_err=terr, ok=good)
        except Exception as e:  # noqa: BLE001 (a failed case is reported, the run goes on)
            row = dict(shape=[B, H, Hkv, L, S, D], dtype=dtn, causal=causal, error=f"{type(e).__name__}: {e}"[:400], ok=False)
        ok &= row["ok"]
        rows.append(row)
        print("check", json.dumps(row), flush=True)
    for seed, (B, Hkv, G, S, D) in enumerate([(1, 8, 4, 1000, 64), (2, 2, 3, 4097, 128), (1, 1, 1, 33, 64)]):
        torch.manual_seed(seed)
        q = torch.randn(B, Hkv, G, 1, D, device="cuda").bfloat16()
        k, v = (torch.randn(B, Hkv, S, D, device="cuda").bfloat16() for _ in range(2))
        try:
            prog = ember_decode(B, Hkv, G, S, D)
            got = prog(q=q, k=k, v=v).double()
            want = oracle(q.reshape(B, Hkv * G, 1, D), k, v, False).reshape(B, Hkv, G, 1, D)
            err = float((got - want).abs().max())
            row = dict(decode=[B, Hkv, G, S, D], modes=[l.config.get("mode") for l in prog.launches], max_err=err,
                       ok=bool(err < 2e-2))
        except Exception as e:  # noqa: BLE001
            row = dict(decode=[B, Hkv, G, S, D], error=f"{type(e).__name__}: {e}"[:400], ok=False)
        ok &= row["ok"]
        rows.append(row)
        print("check", json.dumps(row), flush=True)
    out["check"] = rows
    return ok


def copy_bandwidth() -> float:
    """Bytes per second of a device-to-device copy of 1 GiB (read + write counted)."""
    import torch
    a = torch.empty(1 << 29, dtype=torch.float16, device="cuda")
    b = torch.empty_like(a)
    us = timed(lambda: b.copy_(a), reps=5, inner=5)
    return 2 * a.numel() * 2 / (us * 1e-6)


def bench_decode(out: dict, variants: bool) -> None:
    """Decode attention over long caches: bytes of k and v read once, against the copy bandwidth."""
    import torch
    F = torch.nn.functional
    bw = copy_bandwidth()
    out["copy_GBps"] = round(bw / 1e9, 1)
    rows = []
    for B, Hkv, G, S, D in [(1, 8, 4, 8192, 64), (1, 8, 4, 8192, 128), (4, 8, 4, 8192, 128), (1, 8, 4, 32768, 128),
                            (1, 8, 4, 1024, 64)]:
        torch.manual_seed(0)
        q = torch.randn(B, Hkv, G, 1, D, device="cuda").bfloat16()
        k, v = (torch.randn(B, Hkv, S, D, device="cuda").bfloat16() for _ in range(2))
        nbytes = 2 * k.numel() * 2
        prog = ember_decode(B, Hkv, G, S, D)
        row = dict(B=B, Hkv=Hkv, G=G, S=S, D=D, modes=[l.config.get("mode") for l in prog.launches],
                   cfg=[l.config.get("cfg") for l in prog.launches])
        row["ember_us"] = prog.benchmark(reps=20, q=q, k=k, v=v)
        row["ember_3kernels_us"] = ember_decode(B, Hkv, G, S, D, "unstreamed").benchmark(reps=10, q=q, k=k, v=v)
        if variants:
            for cfg in [{"mode": "decode", "warps": w, "BN": bn, "stages": st, "cluster": c}
                        for w in (4, 8) for bn in (16, 32) for st in (2, 3, 4) for c in (4, 8)]:
                name = f"w{cfg['warps']}_bn{cfg['BN']}_s{cfg['stages']}_c{cfg['cluster']}"
                try:
                    us = ember_decode(B, Hkv, G, S, D, cfg).benchmark(reps=10, q=q, k=k, v=v)
                    row[f"{name}_us"] = round(us, 2)
                except Exception as e:  # noqa: BLE001
                    row[f"{name}_error"] = str(e)[:160]
        qh = q.reshape(B, Hkv * G, 1, D)
        # (SDPA under a CUDA graph, as Ember's program is timed: device time, no launch cost)
        row["sdpa_us"] = graph_timed(lambda: F.scaled_dot_product_attention(qh, k, v, enable_gqa=True))
        best = min(v_ for k_, v_ in row.items() if k_.endswith("_us") and k_ not in ("sdpa_us", "ember_3kernels_us"))
        row["best_us"] = best
        row["ember_pct_copy_bw"] = round(100 * nbytes / (row["ember_us"] * 1e-6) / bw, 1)
        row["best_pct_copy_bw"] = round(100 * nbytes / (best * 1e-6) / bw, 1)
        row["sdpa_pct_copy_bw"] = round(100 * nbytes / (row["sdpa_us"] * 1e-6) / bw, 1)
        print("decode", json.dumps(row), flush=True)
        rows.append(row)
    out["decode"] = rows


MASKED_VARIANTS: list = []  # --masked-only --variants: flash knobs for the masked cases
VARIANTS: list = []  # --variants: flash schedules timed beside the default


def bench(out: dict, quick: bool) -> None:
    import torch
    import ember as em
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    cases = [(4, 32, 4096, 128, True), (4, 32, 512, 128, True), (4, 32, 4096, 128, False), (4, 32, 4096, 64, True),
             (1, 32, 16384, 128, True)]
    if quick:
        cases = cases[:2]
    rows = []
    for B, H, L, D, causal in cases:
        torch.manual_seed(0)
        q, k, v = (torch.randn(B, H, L, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        flops = 4 * B * H * L * L * D / (2 if causal else 1)
        row = dict(B=B, H=H, L=L, D=D, causal=causal, dtype="bfloat16")
        t0 = time.perf_counter()
        prog = ember_sdpa(B, H, H, L, L, D, em.bfloat16, causal)
        row["compile_s"] = round(time.perf_counter() - t0, 2)
        row["kernels"] = len(prog.launches)
        row["modes"] = [l.config.get("mode") for l in prog.launches]
        row["ember_us"] = prog.benchmark(reps=10, q=q, k=k, v=v)
        if B * H * L * L * 6 < 40e9:  # three kernels: the scores in memory
            row["ember_3kernels_us"] = ember_sdpa(B, H, H, L, L, D, em.bfloat16, causal, "unstreamed").benchmark(
                reps=5, q=q, k=k, v=v)
        for cfg in VARIANTS:
            try:
                p2 = ember_sdpa(B, H, H, L, L, D, em.bfloat16, causal, cfg)
                tag = f"w{cfg['warps']}_bn{cfg['BN']}{'_exact' if cfg.get('exact_scores') else ''}"
                row[f"ember_{tag}_us"] = p2.benchmark(reps=10, q=q, k=k, v=v)
            except Exception as e:  # noqa: BLE001
                row[f"ember_w{cfg['warps']}_bn{cfg['BN']}_error"] = str(e)[:200]

        def flash():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        row["sdpa_flash_us"] = timed(flash)
        row["sdpa_default_us"] = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        mask = torch.ones(L, L, dtype=torch.bool, device="cuda").tril() if causal else None

        def eager():
            s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(D))
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            return s.float().softmax(-1).to(q.dtype) @ v
        if B * H * L * L * 6 < 40e9:  # the scores in memory: skipped where they would not fit
            row["eager_us"] = timed(eager, reps=5, inner=3)
            try:
                comp = torch.compile(eager)
                comp()
                row["compile_us"] = timed(comp, reps=5, inner=5)
            except Exception as e:  # noqa: BLE001
                row["compile_error"] = str(e)[:200]
        for key in [k_ for k_ in list(row) if k_.endswith("_us")]:
            row[key.replace("_us", "_tflops")] = round(flops / row[key] / 1e6, 1)
        row["vs_sdpa_flash"] = round(row["sdpa_flash_us"] / row["ember_us"], 3)
        row["vs_sdpa_default"] = round(row["sdpa_default_us"] / row["ember_us"], 3)
        print("bench", json.dumps(row), flush=True)
        rows.append(row)
        q = k = v = None  # noqa: F841 (freed before the next case)
        torch.cuda.empty_cache()
    out["bench"] = rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--decode-only", action="store_true")
    ap.add_argument("--exact-compare", action="store_true")
    ap.add_argument("--prefill-only", action="store_true")
    ap.add_argument("--masked-only", action="store_true", help="only SDPA with a boolean / additive padding mask")
    ap.add_argument("--prefetch-ab", action="store_true",
                    help="with --decode-layers: the default schedule with knob kv_prefetch 0 / 1 / capped, and half_rows")
    ap.add_argument("--decode-layers", type=int, default=0, metavar="N",
                    help="only decode attention as N back-to-back layers in one graph replay")
    ap.add_argument("--decode-cases", default=None, metavar="B,Hkv,G,S,D;...",
                    help="with --decode-layers: these cases instead of the four defaults")
    ap.add_argument("--decode-grid", default=None, metavar="JSON",
                    help="with --decode-layers --variants: the knob grid (keys of DECODE_GRID) instead of the default")
    a = ap.parse_args()
    if a.decode_cases:
        DECODE_CASES[:] = [tuple(int(x) for x in c.split(",")) for c in a.decode_cases.split(";")]
    if a.decode_grid:
        DECODE_GRID.update(json.loads(a.decode_grid))
    if a.variants and a.masked_only:
        MASKED_VARIANTS.extend({"warps": w, "BN": bn} for w, bn in ((8, 128), (4, 64), (8, 64)))
    elif a.variants:
        VARIANTS.extend({"mode": "flash", "warps": w, "BN": bn} for w in (4, 8) for bn in (32, 64, 128))
    if a.exact_compare:  # the flash kernel with the scores rounded as the graph says (exact_scores)
        VARIANTS.extend({"mode": "flash", "warps": w, "BN": bn, "exact_scores": True} for w, bn in ((8, 128), (4, 64)))
        VARIANTS.append({"mode": "flash", "warps": 4, "BN": 64})
    import torch
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if a.masked_only:
        bench_masked(out)
        ok = all(r["ok"] for r in out["masked"])
    elif a.decode_layers:
        bench_decode_layers(out, a.decode_layers, a.variants, a.prefetch_ab)
        ok = all(r["ok"] for r in out["decode_layers"])
    else:
        ok = check(out)
    if not a.check_only and not a.decode_layers and not a.masked_only:
        if not a.prefill_only:
            bench_decode(out, a.variants)
        if not a.decode_only:
            bench(out, a.quick)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    print("all correct" if ok else "SOME WRONG")


if __name__ == "__main__":
    main()
