"""The seed-000 conv (100 x 3 x 224^2 -> 96, 11 x 11, stride 4, float32 accuracy, weights an input) run a few
times for a profiler to watch (not a test; every launch is named ember_kernel, three a call): `--overlay JSON` laid over its wgmma kernel's default config.

    ncu --kernel-name ember_kernel --launch-skip 5 --launch-count 1 --section SpeedOfLight python3 bench/seed_conv_once.py
"""
from __future__ import annotations

import argparse
import json
import sys

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
import ember as em  # noqa: E402
from ember import pipeline  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402


def main():
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--overlay", default="{}", help="JSON knobs laid over the wgmma kernel's default config")
    ap.add_argument("--calls", type=int, default=3)
    a = ap.parse_args()
    x, w = em.input("x", (100, 3, 224, 224)), em.input("w", (96, 3, 11, 11))
    y = em.conv2d(x, w, stride=4, padding=2)
    target = pipeline.get_target("cuda")
    lowered = pipeline.lower([y.node], None, target)
    cfgs = []
    for k, _ in lowered.kernels:
        d = cg.default_config(k, target)
        cfgs.append(dict(d, **json.loads(a.overlay)) if d.get("mode") == "wgmma" else d)
    prog = pipeline.build_program(lowered, target, None, "single", configs=cfgs)
    ins = {"x": torch.randn(100, 3, 224, 224, device="cuda"), "w": torch.randn(96, 3, 11, 11, device="cuda") / 20}
    for _ in range(a.calls):
        prog(**ins)
    torch.cuda.synchronize()
    print("configs:", cfgs)


if __name__ == "__main__":
    main()
