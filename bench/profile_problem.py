"""Run one KernelBench problem's Ember call a few times, for a profiler to watch (not a test).

    ncu --clock-control none --kernel-name regex:'^k[0-9]+_' --launch-skip 4 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats python3 bench/profile_problem.py PATH --precision torch

Ember's kernels are named k<index>_<op>; the first calls compile and warm up, so skip them in the
profiler. `--config JSON` replaces the default schedule of every tensor-core (mma) kernel, to profile
a variant."""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import kernelbench as kb  # noqa: E402
from ember.frontends import pytorch as fe  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--precision", default="float32", choices=list(fe.PRECISIONS))
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--config", default=None, help="JSON schedule for the mma kernels")
    a = ap.parse_args()
    if a.config:
        from ember.codegen import cuda as cg
        override, default = json.loads(a.config), cg.default_config
        cg.default_config = lambda k: dict(override) if default(k).get("mode") == "mma" else default(k)
    model, xs, graph = kb.problem_graph(a.path, a.precision)
    with torch.no_grad():
        fn = fe.TorchFunction(model, graph, "cuda", "none")
        for _ in range(a.calls):
            fn(*xs)
        torch.cuda.synchronize()
    print("kernels:", [(l.kernel, l.config.get("cfg")) for l in fn.program.launches])


if __name__ == "__main__":
    main()
