"""Float32 convolutions at float32 accuracy on the H100 (issue 19: the seed-000 conv at >= 2x eager
with TF32 off): the default schedule (`mma` 3xTF32 with the conv's input gathered) against the
`wgmma` tf32x3 forms (both operands gathered by the producer warpgroups, hi and lo written
directly), torch eager with TF32 off and with cuDNN's TF32, in one process.

    python bench/f32_conv.py [--out F.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

import ember as em  # noqa: E402
from ember import pipeline  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.codegen.cuda_wgmma import wgmma_configs  # noqa: E402

CASES = [("seed-000 conv 100x3x224x224 -> 96, k11 s4 p2", (100, 3, 224, 224, 96, 11, 4, 2)),
         ("resnet conv3x3 64->64 56x56 b32", (32, 64, 56, 56, 64, 3, 1, 1))]


def main():
    import torch
    import torch.nn.functional as F

    from contractions import graph_timed
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    target = pipeline.get_target("cuda")
    for name, (N, C, H, W, O, k, s, p) in CASES:
        x, w = em.input("x", (N, C, H, W)), em.input("w", (O, C, k, k))
        y = em.conv2d(x, w, stride=s, padding=p)
        ins = {"x": torch.randn(N, C, H, W, device="cuda"), "w": torch.randn(O, C, k, k, device="cuda") / (C * k * k) ** 0.5}
        exact = F.conv2d(ins["x"].double(), ins["w"].double(), stride=s, padding=p)
        scale = exact.abs().max().item()
        torch.backends.cudnn.allow_tf32 = False
        eager = graph_timed(lambda: F.conv2d(ins["x"], ins["w"], stride=s, padding=p))
        torch.backends.cudnn.allow_tf32 = True
        tf32 = graph_timed(lambda: F.conv2d(ins["x"], ins["w"], stride=s, padding=p))
        torch.backends.cudnn.allow_tf32 = False
        row = {"case": name, "eager_f32_us": eager, "cudnn_tf32_us": tf32, "variants": []}
        print(f"{name}: eager f32 {eager:.0f} us, cuDNN TF32 {tf32:.0f} us", flush=True)
        lowered = pipeline.lower([y.node], None, target)
        ks = [kk for kk, _ in lowered.kernels]
        conv = next(i for i, kk in enumerate(ks) if cg.contraction_of(cg.canonical(kk)) is not None)
        todo = [None] + wgmma_configs(cg.canonical(ks[conv]), "full", target)[:14]
        for cfg in todo:
            cfgs = [cfg if (i == conv and cfg is not None) else cg.default_config(kk, target) for i, kk in enumerate(ks)]
            label = "default" if cfg is None else json.dumps({a: b for a, b in cfg.items() if a != "mode"}, sort_keys=True)
            try:
                prog = pipeline.build_program(lowered, target, None, "single", configs=cfgs)
                out = prog(**ins)
                torch.cuda.synchronize()
                err = (out.double() - exact).abs().max().item() / scale
                us = prog.benchmark(reps=5, **ins)
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported
                row["variants"].append({"label": label, "error": f"{type(e).__name__}: {str(e)[:300]}"})
                print(f"  {label}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            row["variants"].append({"label": label, "modes": [c.get("mode") for c in cfgs], "us": us,
                                    "vs_eager": eager / us, "err": err})
            print(f"  {label[:60]:60s} {us:8.0f} us  {eager / us:5.2f}x eager f32  err {err:.1e}", flush=True)
        rows.append(row)
        if args.out:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "date": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
