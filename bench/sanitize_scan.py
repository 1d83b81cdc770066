"""The scan kernels (codegen/cuda_scan.py) under compute-sanitizer: cumsum forward, reverse,
exclusive, its gradient and short sums at odd shapes, each run once and checked against float64.

    compute-sanitizer --tool memcheck python3 bench/sanitize_scan.py
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ember as em  # noqa: E402
from tests.test_scan import _graph, _ref  # noqa: E402


def main():
    bad = 0
    cases = [((37, 8191), "cumsum"), ((5, 4001), "reverse"), ((7, 1001), "exclusive"), ((9, 31), "exclusive")]
    for shape, kind in cases:
        y = _graph(em.input("x", shape, "float32"), 1, kind)
        xs = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        out = np.asarray(em.compile(y, device="cuda")(x=xs))
        err = float(np.abs(out - _ref(xs, 1, kind)).max())
        bad += err > 1e-2
        print(kind, shape, "max err", err, flush=True)
    x, w = em.input("x", (6, 1001), "float32"), em.input("w", (6, 1001), "float32")
    gx, = em.grad((x.cumsum(1) * w).sum(), [x])
    ws = np.random.default_rng(1).standard_normal((6, 1001)).astype(np.float32)
    out = np.asarray(em.compile(gx, device="cuda")(w=ws))
    err = float(np.abs(out - np.flip(np.cumsum(np.flip(ws.astype(np.float64), 1), 1), 1)).max())
    bad += err > 1e-2
    print("gradient max err", err, flush=True)
    xs = np.random.default_rng(2).standard_normal((65537, 17)).astype(np.float32)
    out = np.asarray(em.compile(em.input("x", (65537, 17), "float32").sum(-1), device="cuda")(x=xs))
    err = float(np.abs(out - xs.astype(np.float64).sum(-1)).max())
    bad += err > 1e-3
    print("short sums max err", err, flush=True)
    print("wrong", bad)


if __name__ == "__main__":
    main()
