"""Attention's backward in `scores` mode (codegen/cuda_scores.py), kernel by kernel: each kernel's
time, registers and local-memory bytes (spills), and the program's time under schedule variants
(warps x BN for every scores kernel). Run on the GPU:

    python bench/scores_profile.py --out bench/results/scores-profile-DATE.json
"""
from __future__ import annotations

import argparse
import json
import sys

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])

import ember as em  # noqa: E402


def grads(B, H, L, D):
    q, k, v, do = (em.input(n, (B, H, L, D), "bfloat16") for n in ("q", "k", "v", "do"))
    o = em.scaled_dot_product_attention(q, k, v, is_causal=True)
    return em.grad((o.cast("float32") * do.cast("float32")).sum(), [q, k, v])


def build(gs, cfg=None):
    from ember import pipeline
    if cfg is None:
        return em.compile(gs, device="cuda")
    target = pipeline.get_target("cuda")
    lowered = pipeline.lower([x.node for x in gs], None, target)
    cfgs = [dict(cfg) if target.default_config(k, target).get("mode") == "scores" else target.default_config(k, target)
            for k, _ in lowered.kernels]
    return pipeline.build_program(lowered, target, None, "tuple", configs=cfgs)


def main():
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--variants", default="4x64s2,4x64s3,4x64s4,4x32s2,4x32s3,4x32s4,8x64s3")
    a = ap.parse_args()
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    for B, H, L, D in [(4, 16, 1024, 64), (2, 16, 2048, 128)]:
        gs = grads(B, H, L, D)
        torch.manual_seed(0)
        ins = {n: torch.randn(B, H, L, D, device="cuda").bfloat16() for n in ("q", "k", "v", "do")}
        p = build(gs)
        p(**ins)
        times = p.profile(reps=10, **ins)
        ex = p.executor
        kern = []
        for i, (l, kk) in enumerate(zip(p.launches, ex.kernels)):
            at = kk.attributes
            kern.append(dict(kernel=l.kernel, cfg=l.config.get("cfg"), us=round(float(times[i]), 1) if i < len(times) else None,
                             regs=at.num_regs, local_bytes=at.local_size_bytes, smem=l.config.get("smem")))
        row = dict(shape=[B, H, L, D], us=round(p.benchmark(reps=10, **ins), 1), kernels=kern)
        for v in a.variants.split(","):  # WxBNsS[a]: warps x keys a tile, ring slots, (a: fragments from shared memory)
            w_, rest = v.split("x")
            smem = rest.endswith("a")
            bn, _, st = rest.rstrip("a").partition("s")
            try:
                p2 = build(gs, {"mode": "scores", "warps": int(w_), "BN": int(bn), "stages": int(st or 2),
                                "afrag": "smem" if smem else "regs"})
                p2(**ins)
                row[v] = {"us": round(p2.benchmark(reps=10, **ins), 1),
                          "kernels_us": [round(float(x), 1) for x in p2.profile(reps=10, **ins)]}
            except Exception as e:  # noqa: BLE001
                row[v] = str(e)[:120]
        print(json.dumps(row), flush=True)
        out["rows"].append(row)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
