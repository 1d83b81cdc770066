"""The packed GEMM's micro-tiles on a real model's contractions (issue 24): every packed kernel of
the model's program is timed alone under each candidate config (the same candidate applied to all of
them in one build), min of 3 medians, against the default. The rates in `c_gemm.TILE_CHOICES` come
from this run on ResNet-18 (bench/cpu_models.py's) on the 2-core Zen 4.

    python bench/cpu_tiles.py [--model resnet18] [--cands '[{"swap": true, "mr": 14}, ...]'] [--out F.json]

A candidate's keys override each kernel's default config (`{}` = the default itself). Per-kernel
times overstate what a kernel costs inside the whole program (caches warm with its own data):
compare candidates with each other, and confirm a change end to end (bench/cpu_models.py).
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

from cpu_gemm import _cpu_model  # noqa: E402

CANDIDATES = [{"swap": False, "mr": 8}, {"mr": 6, "nr": 64}, {"mr": 4, "nr": 64}, {"swap": True, "mr": 7},
              {"swap": True, "mr": 8}, {"swap": True, "mr": 10}, {"swap": True, "mr": 14}, {"nc": 512, "kc": 256}]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--cands", default=None, help="JSON list of config overrides")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch

    import cpu_models
    import ember as em
    import ember.pipeline as P
    from ember import symbolic as sm
    from ember.backends.target import get_target
    from ember.codegen.c import _contraction
    model, inputs = getattr(cpu_models, args.model)()
    seen = {}
    build = P.build_program

    def spy(lowered, device, names, kind, *a, **k):  # the lowered graph the frontend compiles
        seen.setdefault("args", (lowered, device, names, kind))
        return build(lowered, device, names, kind, *a, **k)
    P.build_program = spy
    try:
        em.from_torch(model, inputs, device="cpu")
    finally:
        P.build_program = build
    lowered, device, names, kind = seen["args"]
    target = get_target(device)
    base = [target.default_config(k, target) for k, _ in lowered.kernels]
    packed = [i for i, c in enumerate(base) if c and c.get("form") == "packed"]
    shapes = {}
    for i in packed:
        g = _contraction(lowered.kernels[i][0])
        shapes[i] = [str(sm.prod(e for _, e in loops)) for loops in (g.batch, g.m, g.n, g.k)]
    feed = {n: t.numpy() for n, t in zip(lowered.inputs, inputs)}
    rows = []
    for cand in [{}] + json.loads(args.cands or json.dumps(CANDIDATES)):
        cfgs = [dict(b, **cand) if i in packed else b for i, b in enumerate(base)]
        try:
            prog = build(lowered, target, names, kind, configs=cfgs)
            arrays, env = prog._bind(feed, None)
            us = {i: min(prog.executor.time_kernel(prog, arrays, env, i, 7) for _ in range(3)) for i in packed}
        except Exception as e:  # a candidate that does not build is reported, not fatal
            print(json.dumps(cand), "failed:", type(e).__name__, str(e)[:200], flush=True)
            continue
        rows.append({"cand": cand, "us": [us[i] for i in packed]})
        print(f"{json.dumps(cand):40s} " + " ".join(f"{us[i]:6.0f}" for i in packed) + f"  sum {sum(us.values()):.0f}",
              flush=True)
    doc = {"model": args.model, "cpu": _cpu_model(), "machine": platform.machine(), "threads": torch.get_num_threads(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "defaults": [base[i] for i in packed],
           "kernels": [{"index": i, "batch_m_n_k": shapes[i]} for i in packed], "rows": rows}
    for i in packed:
        print(i, "B M N K =", shapes[i], "default", base[i])
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
