"""Where a compiled training step spends its time (issue 20: the transformer step at 0.30x eager):
the step of bench/train.py's transformer (or MLP) compiled with `em.compile_train`, each kernel timed
alone (`Program.profile`), grouped by kernel mode and listed by time, with the kernels' IR for the
top ones.

    python bench/train_profile.py --device cuda --out bench/results/train-profile-DATE.json
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--case", default="transformer")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", required=True)
    ap.add_argument("--host", action="store_true", help="also time step() against the program alone, and profile the host side")
    args = ap.parse_args()
    argv, sys.argv = sys.argv, [sys.argv[0], "--device", args.device]  # (train.py parses its own at import)
    try:
        import train
    finally:
        sys.argv = argv

    import ember as em
    from ember import optim
    cfg = train.CONFIGS[args.case][args.device]
    model, _, batch, em_loss, _, flops = train.BUILDERS[args.case](cfg, np.random.default_rng(0))
    first = batch()
    step = em.compile_train(model, em_loss, optim.AdamW(lr=1e-3, weight_decay=0.01), first, device=args.device)
    p = step.program
    feed = {k: v for k, v in {**step.feed, **first, "lr": np.float32(1e-3), "step": np.float32(10)}.items()
            if k in p.inputs}
    total = p.benchmark(reps=20, **feed)
    times = p.profile(reps=10, **feed)
    rows = []
    for i, (l, t) in enumerate(zip(p.launches, times)):
        c = l.config if isinstance(l.config, dict) else {}
        c = c.get("cfg", c) if isinstance(c.get("cfg", c), dict) else c
        rows.append({"i": i, "kernel": l.kernel, "us": round(float(t), 2),
                     "mode": str(c.get("mode", c.get("form", "?"))), "grid": l.config.get("grid") if isinstance(l.config, dict) else None})
    by_mode = collections.Counter()
    count = collections.Counter()
    for r in rows:
        by_mode[r["mode"]] += r["us"]
        count[r["mode"]] += 1
    top = sorted(rows, key=lambda r: -r["us"])[:args.top]
    print(f"{args.case}: {len(rows)} kernels, program {total:.0f} us, kernels alone sum {sum(times):.0f} us")
    for m, t in by_mode.most_common():
        print(f"  mode {m:12s} {count[m]:4d} kernels {t:9.1f} us")
    for r in top:
        print(f"  #{r['i']:3d} {r['us']:8.1f} us  {r['mode']:10s} {r['kernel']}")
    ir = p.meta.get("kernels_ir", "").split("\nkernel ")
    names = {r["kernel"] for r in top[:6]}
    for m in by_mode:  # and the slowest kernel of every mode
        names.add(max((r for r in rows if r["mode"] == m), key=lambda r: r["us"])["kernel"])
    top_ir = [("kernel " + k if not k.startswith("kernel ") else k) for k in ir
              if any(k.split("(")[0].strip().split()[-1] == n for n in names)]
    doc = {"case": args.case, "config": cfg, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "program_us": total, "kernels": rows, "by_mode": dict(by_mode), "top_ir": top_ir}
    if args.host:
        import cProfile
        import io
        import pstats
        for _ in range(8):  # (on CUDA the step's graphs are captured on the 4th and 5th calls)
            step(first)
        t = time.perf_counter()
        for _ in range(10):
            step(first)
        doc["step_us"] = (time.perf_counter() - t) / 10 * 1e6
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(10):
            step(first)
        pr.disable()
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(15)
        doc["host_profile"] = buf.getvalue()
        print(f"step() {doc['step_us']:.0f} us against the program's {total:.0f} us; host profile of 10 steps:")
        print(buf.getvalue())
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
