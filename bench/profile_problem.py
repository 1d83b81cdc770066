"""Run one KernelBench problem's Ember call a few times, for a profiler to watch (not a test).

    ncu --clock-control none --kernel-name regex:'^k[0-9]+_' --launch-skip 4 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats python3 bench/profile_problem.py PATH --precision torch

Ember's kernels are named k<index>_<op>; the first calls compile and warm up, so skip them in the
profiler. `--overlay JSON` is laid over the default schedule of every tensor-core (mma) kernel, as
bench/knob_sweep.py does, to profile a variant."""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from ember.frontends import pytorch as fe  # noqa: E402

import kernelbench as kb  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--precision", default="float32", choices=list(fe.PRECISIONS))
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--overlay", default=None, help="JSON knobs laid over the mma kernels' defaults")
    a = ap.parse_args()
    if a.overlay:
        from ember.codegen import cuda as cg

        from knob_sweep import with_overlay
        cg.default_config = with_overlay(json.loads(a.overlay))
    model, xs, graph = kb.problem_graph(a.path, a.precision)
    with torch.no_grad():
        fn = fe.TorchFunction(model, graph, "cuda", "none")
        for _ in range(a.calls):
            fn(*xs)
        torch.cuda.synchronize()
    print("kernels:", [(l.kernel, l.config.get("cfg")) for l in fn.program.launches])


if __name__ == "__main__":
    main()
