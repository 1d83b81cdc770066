"""Which kernels the library (cuBLAS / cuDNN through torch) runs for the contraction suite's cases, and for how long:
their names carry the tile, the cluster shape and the schedule (e.g. `..._tilesize128x128x64_cluster2x1x1_...`,
stream-K / split-K), so what the library does where Ember's default trails it (the few-tile prefill GEMMs) can be
read before building it. Each case's torch call under torch.profiler after a warm-up; kernels over 0.5 us printed.

    python bench/library_kernels.py [--suite prefill,bert] [--out F.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

from contractions import build, cases  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default=None, help="comma-separated substrings of case names (default: all but GEMVs)")
    ap.add_argument("--out")
    args = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile
    rows = []
    for name, shape, layout, dtype in cases(False):
        if name.startswith("gemv") or (args.suite and not any(w in name for w in args.suite.split(","))):
            continue
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = dtype == "float32"
        _, _, fn, flops = build(shape, layout, dtype)
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                fn()
            torch.cuda.synchronize()
        kernels = {}
        for ev in prof.events():
            if ev.device_type.name == "CUDA":
                k = kernels.setdefault(ev.name, [0, 0.0])
                k[0] += 1
                k[1] += ev.device_time if hasattr(ev, "device_time") else ev.cuda_time
        for kname, (count, total) in sorted(kernels.items(), key=lambda kv: -kv[1][1]):
            us = total / count
            if us < 0.5:
                continue
            rows.append({"case": name, "kernel": kname, "calls": count, "us": us})
            print(f"{name:40s} {us:8.1f} us x{count // 10}  {kname[:160]}", flush=True)
    if args.out:
        json.dump({"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "torch": torch.__version__, "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
