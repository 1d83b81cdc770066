"""A/B of wgmma configs on short-K contractions (a few k slices a tile: the ring's depth decides whether the
producer runs into the next tile): each config's program timed as a graph replay in one process, against
the library. python bench/short_k_ab.py --out F.json"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

from contractions import build, graph_timed, program  # noqa: E402

CASES = [("resnet50 b32 conv1x1 256->64 56x56", (32, 256, 56, 56, 64, 1, 1, 0), "conv"),
         ("resnet50 b32 conv1x1 64->256 56x56", (32, 64, 56, 56, 256, 1, 1, 0), "conv"),
         ("resnet50 b32 conv1x1 512->128 28x28", (32, 512, 28, 28, 128, 1, 1, 0), "conv"),
         ("gemm 8192x4096x256 nt", (8192, 4096, 256), "nt"),
         # NCHW images whose rows are not 16-byte strides (196 / 49 pixels): copied channels-last first
         ("resnet50 b32 conv1x1 1024->256 14x14", (32, 1024, 14, 14, 256, 1, 1, 0), "conv"),
         ("resnet50 b32 conv1x1 2048->512 7x7", (32, 2048, 7, 7, 512, 1, 1, 0), "conv")]
CFGS = [None, {"stages": 8}, {"stages": 8, "pingpong": True}, {"stages": 8, "persistent": True},
        {"stages": 6}, {"BN": 128, "stages": 6}]
if os.environ.get("SHORT_K_CFGS"):  # (a JSON list of overlays, null for the default)
    CFGS = json.loads(os.environ["SHORT_K_CFGS"])
# (with --envs: the default config resolved under each set of EMBER_* variables, e.g. '[{}, {"EMBER_WGMMA_SHALF": "0"}]')
EPILOGUE_CASES = [("bert-base b32x128 ff1 +bias+gelu", (4096, 3072, 768), "nt+bias+gelu"),
                  ("bert-base b32x128 qkv +bias", (4096, 2304, 768), "nt+bias"),
                  ("bert-base b32x128 ff2 +bias+res", (4096, 768, 3072), "nt+bias+res"),
                  ("llama1b prefill512 o +res", (512, 2048, 2048), "nt+res"),
                  ("gemm 8192x4096x256 +res", (8192, 4096, 256), "nt+res")]


@contextlib.contextmanager
def environment(env: dict):
    """EMBER_* variables set for the block, restored after."""
    saved = {n: os.environ.get(n) for n in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for n, v in saved.items():
            os.environ.pop(n, None) if v is None else os.environ.__setitem__(n, v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--suite", default=None, help="comma-separated substrings of bench/contractions.py case names to run "
                    "instead of CASES (the mid-size BERT / Llama GEMMs: 'prefill,bert'); 'epilogue': EPILOGUE_CASES")
    ap.add_argument("--envs", default=None, help="a JSON list of EMBER_* variable sets: each case's default resolved "
                    "and timed under each (overlays in SHORT_K_CFGS then ignored)")
    args = ap.parse_args()
    cases = CASES
    if args.suite == "epilogue":
        cases = EPILOGUE_CASES
    elif args.suite:
        from contractions import cases as suite
        cases = [(n, shape, layout) for n, shape, layout, dtype in suite(False)
                 if dtype == "bfloat16" and not n.startswith("gemv") and any(w in n for w in args.suite.split(","))]
    import torch
    from ember import pipeline
    from ember.codegen import cuda as cg
    rows = []
    for name, shape, layout in cases:
        y, ins, fn, flops = build(shape, layout, "bfloat16")
        lib = graph_timed(fn)
        t = pipeline.get_target("cuda")

        def base_config():
            d = [cg.default_config(k, t) for k, _ in pipeline.lower([y.node], None, t).kernels]
            return next(c for c in d if c.get("mode") in ("wgmma", "mma"))
        base = base_config()
        runs = [(over, None if over is None else dict(base, **over), None) for over in CFGS]
        if args.envs:  # (each set's whole default program lowered and rendered under it: a flag may change the lowering)
            runs = [(env, None, env) for env in json.loads(args.envs)]
        for over, cfg, env in runs:
            try:
                if env is not None:
                    with environment(env):
                        lowered = pipeline.lower([y.node], None, t)
                        cfgs = [cg.default_config(k, t) for k, _ in lowered.kernels]
                        prog = pipeline.build_program(lowered, t, None, "single", configs=cfgs)
                    cfg = next(c for c in cfgs if c.get("mode") in ("wgmma", "mma"))
                else:
                    built = program(y, cfg)
                    if built is None:
                        continue
                    prog, _ = built
                us = min(prog.benchmark(reps=7, **ins) for _ in range(2))
                out = prog(**ins)
                out = out.float().cpu().numpy() if hasattr(out, "cpu") else np.asarray(out).astype(np.float32)
                err = float(np.abs(out - fn().float().cpu().numpy()).max())
                rows.append({"case": name, "cfg": cfg or base, "us": us, "library_us": lib, "max_err": err})
                shown = {k: v for k, v in (cfg or base).items() if k in ("BM", "BN", "stages", "persistent", "shalf", "cluster", "pingpong",
                                                                          "streamk", "mcast")}
                print(f"{name:38s} {json.dumps(over):48s} {us:8.1f} us  library {lib:7.1f}  err {err:.3g}"
                      f"{'  ' + json.dumps(shown) if args.envs else ''}", flush=True)
            except Exception as e:  # noqa: BLE001 - per config
                print(f"{name:38s} {json.dumps(over):48s} FAILED {type(e).__name__}: {str(e)[:120]}", flush=True)
    if args.out:
        json.dump({"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "torch": torch.__version__, "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
