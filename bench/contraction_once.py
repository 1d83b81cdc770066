"""One contraction-suite case run a few times, for a profiler (ncu --kernel-name ember_kernel --launch-skip ...):
Ember's default program, an overlay on its contraction's config, or the library's call (--library).

    ncu --kernel-name ember_kernel --launch-skip 3 --launch-count 1 python bench/contraction_once.py --case "prefill512 qkv"
"""
from __future__ import annotations

import argparse
import json
import sys

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

from contractions import build, cases, program  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True, help="a substring of one bench/contractions.py case name")
    ap.add_argument("--overlay", default=None, help="JSON merged into the default config of the contraction")
    ap.add_argument("--library", action="store_true", help="run the torch (cuBLAS / cuDNN) call instead")
    ap.add_argument("--reps", type=int, default=6)
    args = ap.parse_args()
    found = [c for c in cases(False) if args.case in c[0]]
    if len(found) != 1:
        sys.exit(f"--case {args.case!r} names {len(found)} cases: {[c[0] for c in found][:6]}")
    name, shape, layout, dtype = found[0]
    import torch
    y, ins, fn, _ = build(shape, layout, dtype)
    if args.library:
        for _ in range(args.reps):
            fn()
    else:
        from ember import pipeline
        from ember.codegen import cuda as cg
        t = pipeline.get_target("cuda")
        base = next(c for c in (cg.default_config(k, t) for k, _ in pipeline.lower([y.node], None, t).kernels)
                    if c.get("mode") in ("wgmma", "mma"))
        cfg = dict(base, **json.loads(args.overlay)) if args.overlay else None
        prog, cfgs = program(y, cfg)
        print(name, json.dumps([c for c in cfgs if c.get("mode") in ("wgmma", "mma")]), flush=True)
        for _ in range(args.reps):
            prog(**ins)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
