"""Where a short KernelBench problem's time goes under the KernelBench protocol (not a test): the device idle
(synchronised), an event, the call, an event. For Ember and eager: that event time, the device time of the
same work queued back to back (no host gap), and the host time of one call. The difference between the first
two is the host's latency showing on the device's clock.

    python3 bench/call_latency.py kernelbench/level1/13_tanh.py [more problems] [--out F.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import kernelbench as kb  # noqa: E402

from ember.frontends import pytorch as fe  # noqa: E402


def idle_start(fn, reps=60):
    """Median event time of one call started on an idle device (the KernelBench protocol without the flush)."""
    ts, hs = [], []
    for _ in range(reps):
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        h0 = time.perf_counter()
        e0.record()
        out = fn()
        e1.record()
        hs.append((time.perf_counter() - h0) * 1e6)
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)
        del out
    return float(np.median(ts)), float(np.median(hs))


def back_to_back(fn, reps=60):
    """Device time per call with calls queued back to back (the host runs ahead)."""
    outs = [fn() for _ in range(3)]
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(reps):
        outs.append(fn())
        outs.pop(0)
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) * 1e3 / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = []
    for path in a.paths:
        model, xs, graph = kb.problem_graph(path, "torch")
        with torch.no_grad():
            fn = fe.TorchFunction(model, graph, "cuda", "none")
            model = model.cuda()
            xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in xs]
            row = {"problem": os.path.basename(path), "ember_kernels": len(fn.program.launches)}
            g = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            with torch.cuda.stream(side):
                model(*xs)
            torch.cuda.synchronize()
            with torch.cuda.graph(g):
                gout = model(*xs)  # noqa: F841 (kept alive with the graph)
            variants = (("eager", lambda: model(*xs)), ("ember", lambda: fn(*xs)), ("eager_graph", lambda: g.replay()))
            for name, f in variants:
                for _ in range(5):
                    f()
                ev, host = idle_start(f)
                row[f"{name}_idle_us"], row[f"{name}_host_us"] = ev, host
                row[f"{name}_b2b_us"] = back_to_back(f)
            print(json.dumps({k: (round(v, 1) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
            rows.append(row)
    if a.out:
        json.dump({"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "torch": torch.__version__, "rows": rows}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
