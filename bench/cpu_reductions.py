"""Reductions on the CPU: the columns form and cascaded float sums (codegen/c_columns.py,
codegen/c_cascade.py) against the plain loops they replace, and torch, in one interleaved run.

    python bench/cpu_reductions.py [--reps 15] [--out bench/results/cpu-reductions-DATE.json]

Each case is compiled twice — the default configuration, and with the columns form swapped back to
the loops and the cascade off (MIN_TERMS out of reach) — and the two programs and torch's own op are
timed in alternation (median of --reps calls). The error of each against float64 is recorded too.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp())

import torch  # noqa: E402

import ember as em  # noqa: E402
from ember.codegen import c as cc  # noqa: E402
from ember.codegen import c_cascade  # noqa: E402

CASES = [  # name, shape, what (as an Ember graph and as torch), dtype
    ("sum axis 0, 8192^2", (8192, 8192), "sum0"),
    ("sum axis 0, 4096^2", (4096, 4096), "sum0"),
    ("variance axis 0, 4096 x 1024", (4096, 1024), "var0"),
    ("sum axis 1, 32 x 512 x 64", (32, 512, 64), "sum1"),
    ("sum axis 1, 4096 x 16384", (4096, 16384), "sum1"),
    ("group statistics, 16 x 16 x 34^3", (16, 16, 34, 34, 34), "groupvar"),
    ("softmax, 4096^2", (4096, 4096), "softmax"),
]


def graphs(what: str, x):
    if what == "sum0":
        return x.sum(0), lambda t: t.sum(0)
    if what == "sum1":
        return x.sum(1), lambda t: t.sum(1)
    if what == "var0":
        return x.var(0), lambda t: t.var(0)
    if what == "softmax":
        return x.softmax(-1), lambda t: t.softmax(-1)
    n = x.shape[0]
    xg = x.reshape([n, 8, -1])
    mu = xg.mean(2, keepdim=True)
    return ((xg - mu) * (xg - mu)).mean(2), lambda t: t.reshape(n, 8, -1).var(2, correction=0)


def plain_loops(k, *a, **kw):
    cfg = ORIGINAL(k, *a, **kw)
    return {"form": "loops"} if cfg.get("form") == "columns" else cfg


ORIGINAL = cc.default_config


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for name, shape, what in CASES:
        x = em.input("x", shape)
        y, ref_fn = graphs(what, x)
        cc.default_config, c_cascade.MIN_TERMS = ORIGINAL, 4096
        new = em.compile(y, device="cpu")
        cc.default_config, c_cascade.MIN_TERMS = plain_loops, 1 << 62
        old = em.compile(y * 1.0, device="cpu")  # (another graph: its own program)
        cc.default_config, c_cascade.MIN_TERMS = ORIGINAL, 4096
        xs = np.maximum(rng.standard_normal(shape) * 0.05 - 0.04, 0).astype(np.float32)
        xt = torch.from_numpy(xs)
        ref = ref_fn(torch.from_numpy(xs.astype(np.float64))).numpy()
        calls = {"ember": lambda: new(x=xs), "ember_loops": lambda: old(x=xs), "torch": lambda: ref_fn(xt)}
        times: dict = {k: [] for k in calls}
        for _ in range(args.reps):
            for k, f in calls.items():
                t0 = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t0)
        row = {"case": name, "shape": list(shape)}
        for k, f in calls.items():
            out = np.asarray(f()).astype(np.float64)
            row[f"{k}_ms"] = round(float(np.median(times[k])) * 1e3, 3)
            row[f"{k}_rel_err"] = float(np.max(np.abs(out - ref)) / max(np.max(np.abs(ref)), 1e-30))
        row["speedup_vs_loops"] = round(row["ember_loops_ms"] / row["ember_ms"], 2)
        row["vs_torch"] = round(row["torch_ms"] / row["ember_ms"], 2)
        rows.append(row)
        print(f"{name:34s} ember {row['ember_ms']:8.2f} ms (err {row['ember_rel_err']:.1e})  loops {row['ember_loops_ms']:8.2f} "
              f"(err {row['ember_loops_rel_err']:.1e})  torch {row['torch_ms']:8.2f} (err {row['torch_rel_err']:.1e})", flush=True)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                   f"cpu-reductions-{datetime.date.today()}.json")
    with open(out, "w") as f:
        json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": platform.processor() or platform.machine(),
                   "cores": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads(), "reps": args.reps,
                   "rows": rows}, f, indent=1)
    print("results:", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
