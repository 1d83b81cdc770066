"""Where does a KernelBench problem's time go: device kernels or the host call? (not a test)

For each named problem: the sum of CUDA kernel durations per call (torch.profiler / CUPTI, which
sees Ember's cuda.core launches too) for Ember and for eager, next to the event-timed call as
bench/kernelbench.py measures it (events around one call, cache flushed). A gap in the event time
that the kernel time does not show is host latency before the first kernel starts.

Usage: python bench/kernel_vs_host.py kernelbench/level1/10_relu.py ... [--out FILE]"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(__file__))
from ember.frontends import pytorch as fe  # noqa: E402

import kernelbench as kb  # noqa: E402


def kernel_us(call, xs, reps=20) -> tuple[float, dict]:
    """Mean device-kernel time per call (us) and the per-kernel-name totals per call."""
    for _ in range(3):
        call(*xs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            call(*xs)
        torch.cuda.synchronize()
    per = {}
    for ev in prof.events():
        if ev.device_type.name == "CUDA" and "memcpy" not in ev.name.lower() and "memset" not in ev.name.lower():
            per[ev.name[:60]] = per.get(ev.name[:60], 0.0) + ev.device_time_total / reps
    return sum(per.values()), per


def event_us(call, xs=(), flush=None, reps=30) -> float:
    """Median CUDA-event time (us) around one call, the cache flushed first when `flush` is given."""
    ts = []
    for _ in range(3):
        call(*xs)
    for t in range(reps):
        if flush is not None:
            flush.fill_(t)
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        out = call(*xs)
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)
        del out
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--out")
    ap.add_argument("--precision", default="float32", choices=list(fe.PRECISIONS), help="Ember's, as from_torch's")
    ap.add_argument("--top", type=int, default=4, help="kernels listed per implementation")
    a = ap.parse_args()
    flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
    rows = []
    for path in a.paths:
        model, xs, graph = kb.problem_graph(path, a.precision)
        with torch.no_grad():
            fn = fe.TorchFunction(copy.deepcopy(model), graph, "cuda", "none")
            row = {"problem": os.path.basename(path)}
            for name, call in (("ember", fn), ("eager", model)):
                k, per = kernel_us(call, xs)
                row[f"{name}_kernel_us"] = round(k, 1)
                row[f"{name}_event_us"] = round(event_us(call, xs, flush), 1)
                row[f"{name}_kernels"] = {n: round(v, 1) for n, v in sorted(per.items(), key=lambda kv: -kv[1])[:a.top]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"),
           "torch": torch.__version__, "precision": a.precision, "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
