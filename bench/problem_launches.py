"""One KernelBench problem's launches timed one by one under Ember (Program.profile), its configs beside, and
torch.compile's kernels from the profiler, side by side (not a test): where a problem's gap to eager or
torch.compile lies.

    python3 bench/problem_launches.py kernelbench/level3/04_mobilenetv2_blocks.py [--precision torch] [--top 25]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import kernelbench as kb  # noqa: E402
from model_kernel_profile import kernel_times  # noqa: E402

from ember.frontends import pytorch as fe  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--precision", default="torch", choices=list(fe.PRECISIONS))
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-compile", action="store_true", help="Ember's launches only (torch.compile not run)")
    a = ap.parse_args()
    model, xs, graph = kb.problem_graph(a.path, a.precision)
    res = {"problem": a.path}
    with torch.no_grad():
        fn = fe.TorchFunction(model, graph, "cuda", "none")
        fn(*xs)
        feed, _ = fn._feed(xs, {})
        times = fn.program.profile(reps=20, **feed)
        rows = [[l.kernel, round(us, 1), {k: v for k, v in l.config.items() if k not in ("grid", "block")}]
                for l, us in zip(fn.program.launches, times)]
        res["ember_launches"] = rows
        print(f"== ember: {len(rows)} launches, {sum(r[1] for r in rows):.1f} us")
        for k, us, cfg in sorted(rows, key=lambda r: -r[1])[:a.top]:
            print(f"  {us:8.1f} us  {k[:40]:40s} {json.dumps(cfg)[:150]}")
        if a.no_compile:
            return _save(a, res)
        cm = torch.compile(model)
        t = kernel_times(lambda: cm(*xs), 10)
        res["torch_compile"] = sorted(([k, *v] for k, v in t.items()), key=lambda r: -r[1])
        print(f"== torch.compile: {sum(v[0] for v in t.values()):.1f} us of kernels, {sum(v[1] for v in t.values())} launches")
        for k, us, n in res["torch_compile"][:a.top]:
            print(f"  {us:8.1f} us  x{n}  {k[:110]}")
    _save(a, res)


def _save(a, res) -> None:
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
