"""The pieces of one Ember call from PyTorch on CUDA, timed alone on the host (not a test): the call itself, a
torch CUDA graph's replay, cuGraphLaunch through cuda.bindings, torch.empty_like, the raw stream lookup, the
context check, and a cProfile of the call. Where the host's ~20 us between the caller's event and the kernel go.

    python3 bench/call_path_profile.py [kernelbench/level1/13_tanh.py] [--out F.json]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import kernelbench as kb  # noqa: E402

from ember.backends.cuda_device import device  # noqa: E402
from ember.frontends import pytorch as fe  # noqa: E402


def host_us(f, n=3000):
    """Host microseconds a call, the clock stopped before the device is waited for (bench/overhead.py's
    wall_us waits first: calls a second, not the host's share of one)."""
    for _ in range(100):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    dt = (time.perf_counter() - t0) / n * 1e6
    torch.cuda.synchronize()
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?", default="kernelbench/level1/10_relu.py")
    ap.add_argument("--out")
    ap.add_argument("--small", action="store_true", help="the problem's model over 256-element inputs")
    a = ap.parse_args()
    model, xs, graph = kb.problem_graph(a.path, "torch")
    if a.small:  # the problem's graph re-imported over tiny inputs: the host path without a long kernel behind it
        xs = [torch.randn(*([1] * (x.dim() - 1)), 256) for x in xs]
        model, graph = model.cpu(), None
        with torch.no_grad():
            graph = fe.import_graph(fe.export(model, tuple(xs)), precision="torch")
        model = model.cuda()
    xs = [x.cuda() for x in xs]
    small = [torch.randn(256, device="cuda") for _ in xs]  # the host path without a long kernel queued behind
    with torch.no_grad():
        fn = fe.TorchFunction(model, graph, "cuda", "none")
        ex = fn.program.executor
        for _ in range(3):
            fn(*xs)
        torch.cuda.synchronize()
        g = next(iter(ex._graphs.values()))
        raw = torch._C._cuda_getCurrentRawStream
        from ember.backends.cuda_call import ctypes_graph_launch
        ctl, gh = ctypes_graph_launch(), int(g.handle)
        tg = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            y = small[0] * 2
        torch.cuda.synchronize()
        with torch.cuda.graph(tg):
            y = small[0] * 2  # noqa: F841
        e = torch.cuda.Event()
        pieces = {
            "ember_call": (lambda: fn(*xs), 3000),
            "torch_graph_replay": (tg.replay, 3000),
            "replay_only": (lambda: ex._replay(g), 3000),
            "replay_ctypes": (lambda: ctl(gh, raw(0)), 3000),
            "empty_like": (lambda: torch.empty_like(xs[0]), 3000),
            "raw_stream": (lambda: raw(0), 3000),
            "device()": (lambda: device(0), 3000),
            "event_record": (e.record, 3000),
            "is_grad_enabled": (torch.is_grad_enabled, 3000),
            "tensor_checks": (lambda: xs[0].shape == xs[0].shape and xs[0].is_cuda and xs[0].is_contiguous(), 3000),
            "eager_small_mul": (lambda: small[0] * 2, 3000),
        }
        rows = {}
        for k, (f, n) in pieces.items():
            rows[k] = host_us(f, n)
            print(f"{k:22s} {rows[k]:8.2f} us", flush=True)
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(3000):
            fn(*xs)
        pr.disable()
        torch.cuda.synchronize()
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(18)
        print(buf.getvalue())
    if a.out:
        json.dump({"device": torch.cuda.get_device_name(), "problem": a.path, "host_us": rows, "profile": buf.getvalue()},
                  open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
