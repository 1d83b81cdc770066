"""Run one bench/gpu_models.py model's Ember call a few times, for a profiler to watch (not a test).
Every Ember kernel is named `ember_kernel` in its module unless EMBER_KEEP_KERNEL_NAMES=1
(backends/cuda_compile.py); without it pick launches by position: call c's kernel i is launch
c * (the program's launch count) + i of that name.

    EMBER_KEEP_KERNEL_NAMES=1 ncu --kernel-name regex:'^k7_' --launch-skip 1 --launch-count 1 --section SpeedOfLight \\
        python3 bench/profile_model.py --model "resnet50 b32" --calls 2
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import gpu_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50 b32", choices=list(gpu_models.MODELS))
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("--calls", type=int, default=2)
    a = ap.parse_args()
    import ember as em
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
    model, inputs, _ = gpu_models.MODELS[a.model]()
    model = model.cuda().to(dt) if a.dtype == "bf16" else model.cuda()
    ins = inputs(dt)
    with torch.no_grad():
        fn = em.from_torch(model, ins, device="cuda", precision="torch")
        print("launches per call:", len(fn.program.launches), [l.kernel for l in fn.program.launches], flush=True)
        for _ in range(a.calls):
            fn(*ins)
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
