"""Float32 convolutions at float32 accuracy on the H100 (issue 19: the seed-000 conv at >= 2x eager
with TF32 off): the default schedule (`mma` 3xTF32 with the conv's input gathered) against the
`wgmma` tf32x3 forms (both operands gathered by the producer warpgroups, hi and lo written
directly), torch eager with TF32 off and with cuDNN's TF32, in one process.

    python bench/f32_conv.py [--out F.json] [--cases 0,1] [--tf32] [--mish] [--const-weights] [--configs N]
                             [--overlays '[{"swap": true, "rs": true, "BN": 96}]']
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

import ember as em  # noqa: E402
from ember import pipeline  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402
from ember.codegen.cuda_wgmma_space import wgmma_configs  # noqa: E402

CASES = [("seed-000 conv 100x3x224x224 -> 96, k11 s4 p2", (100, 3, 224, 224, 96, 11, 4, 2)),
         ("resnet conv3x3 64->64 56x56 b32", (32, 64, 56, 56, 64, 3, 1, 1)),
         # the project's KernelBench 32 (64 -> 128) and 14 (64 -> 64, then mish twice: `--mish`), in TF32
         # with --tf32 as the suite runs them (0.888 and 1.375 ms on the H100, gpu-session35-2026-11-28/b/)
         ("kb32 conv3x3 64->128 128x128 b32", (32, 64, 128, 128, 128, 3, 1, 1)),
         ("kb14 conv3x3 64->64 128x128 b32", (32, 64, 128, 128, 64, 3, 1, 1))]


def main():
    import torch
    import torch.nn.functional as F

    from contractions import graph_timed
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--cases", default="0,1", help="comma-separated indices into CASES")
    ap.add_argument("--tf32", action="store_true", help="TF32 products (torch's precision; eager with cuDNN's TF32)")
    ap.add_argument("--mish", action="store_true", help="mish(mish(conv)) as KernelBench's 14 (its epilogue)")
    ap.add_argument("--const-weights", action="store_true", help="weights as constants (a model's parameters)")
    ap.add_argument("--configs", type=int, default=14, help="wgmma configs to try (0: all of the full space)")
    ap.add_argument("--knob", default=None, help="also each config (and the default) with this knob on, e.g. im2col")
    ap.add_argument("--overlays", default=None, help="JSON list of knob dicts laid over the default wgmma config, timed "
                    "instead of the space (e.g. '[{\"swap\": true, \"rs\": true, \"BN\": 96}]')")
    args = ap.parse_args()
    rows = []
    target = pipeline.get_target("cuda")
    for name, (N, C, H, W, O, k, s, p) in (CASES[int(i)] for i in args.cases.split(",")):
        wt = torch.randn(O, C, k, k) / (C * k * k) ** 0.5
        x, w = em.input("x", (N, C, H, W)), (em.tensor(wt.numpy()) if args.const_weights else em.input("w", (O, C, k, k)))
        with (em.allow_tf32() if args.tf32 else contextlib.nullcontext()):
            y = em.conv2d(x, w, stride=s, padding=p)
            if args.mish:
                y = em.mish(em.mish(y))
        name += (" tf32" if args.tf32 else "") + (" +mish x2" if args.mish else "")
        ins = {"x": torch.randn(N, C, H, W, device="cuda")}
        wc = wt.cuda()
        if not args.const_weights:
            ins["w"] = wc
        exact = F.conv2d(ins["x"].double(), wc.double(), stride=s, padding=p)
        scale = exact.abs().max().item()
        def eager_fn():
            out = F.conv2d(ins["x"], wc, stride=s, padding=p)
            return F.mish(F.mish(out)) if args.mish else out
        if args.mish:
            exact = F.mish(F.mish(exact))
            scale = exact.abs().max().item()
        torch.backends.cudnn.allow_tf32 = args.tf32
        eager = graph_timed(eager_fn)
        torch.backends.cudnn.allow_tf32 = True
        tf32 = graph_timed(eager_fn)
        torch.backends.cudnn.allow_tf32 = False
        row = {"case": name, "eager_f32_us": eager, "cudnn_tf32_us": tf32, "variants": []}
        name += " const w" if args.const_weights else ""
        print(f"{name}: eager {'tf32' if args.tf32 else 'f32'} {eager:.0f} us, cuDNN TF32 {tf32:.0f} us", flush=True)
        lowered = pipeline.lower([y.node], None, target)
        ks = [kk for kk, _ in lowered.kernels]
        conv = next(i for i, kk in enumerate(ks) if cg.contraction_of(cg.canonical(kk)) is not None)
        space = wgmma_configs(cg.canonical(ks[conv]), "full", target)
        todo = [None] + (space if args.configs == 0 else space[:args.configs])
        if args.overlays:
            d = cg.default_config(ks[conv], target)
            todo = [None] + [dict(d, **o) for o in json.loads(args.overlays)]
        if args.knob:  # (the default's wgmma config, then each listed one, with the knob on)
            d = cg.default_config(ks[conv], target)
            todo += [dict(c, **{args.knob: True}) for c in [d] + todo[1:] if c.get("mode") == "wgmma"]
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
            print(f"  {label[:60]:60s} {us:8.0f} us  {eager / us:5.2f}x eager  err {err:.1e}", flush=True)
        rows.append(row)
        if args.out:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "date": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
