"""Accuracy of the CUDA renderer's own float math (em_lg2, em_rcp in codegen/cuda.py's PRELUDE)
against float64 numpy, measured on the GPU (not a test: tests check whole ops at the tolerances of
docs/architecture.md; this states the functions' own error).

For each function: inputs spread over every binade (random mantissas), dense samples near 1 (where
a logarithm is small), and the special values; reported: max error in ulps of the float32 result,
max absolute error, and the input where each occurred, next to CUDA's log2f / IEEE 1/x on the same
inputs. Usage: python bench/math_accuracy.py [--out FILE]"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNELS = r"""
extern "C" __global__ void run(float* __restrict__ y, const float* __restrict__ x, int n, int which) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  y[i] = which == 0 ? em_lg2(v) : which == 1 ? log2f(v) : which == 2 ? em_rcp(v) : 1.0f / v;
}
"""


def inputs(rng) -> np.ndarray:
    bits = rng.integers(0x00000001, 0x7f800000, 1 << 22, dtype=np.int64).astype(np.uint32)  # every positive binade
    spread = bits.view(np.float32)
    near1 = (1 + rng.uniform(-0.25, 0.25, 1 << 22)).astype(np.float32)
    tiny = (1 + rng.uniform(-1, 1, 1 << 20) * 2.0 ** -rng.integers(5, 24, 1 << 20)).astype(np.float32)
    special = np.array([0.0, -0.0, 1.0, 2.0, 0.5, np.inf, -np.inf, np.nan, -1.0, 1e-45, 1.1754942e-38, 3.4028235e38],
                       np.float32)
    return np.concatenate([spread, -spread[:1000], near1, tiny, special])


def ulp_err(out: np.ndarray, ref64: np.ndarray) -> np.ndarray:
    ref32 = ref64.astype(np.float32)
    fin = np.isfinite(ref32) & np.isfinite(out)
    e = np.zeros(out.shape)
    sp = np.spacing(np.abs(ref32[fin])).astype(np.float64)
    e[fin] = np.abs(out[fin].astype(np.float64) - ref64[fin]) / sp
    bad = ~fin & ~((np.isnan(out) & np.isnan(ref32)) | (out == ref32))
    e[bad] = np.inf
    return e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    a = ap.parse_args()
    import torch
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, Stream, launch
    from ember.codegen.cuda import PRELUDE
    Device().set_current()
    k = Program(PRELUDE + KERNELS, "c++", ProgramOptions(arch="sm_90")).compile("cubin").get_kernel("run")
    st = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    x = inputs(np.random.default_rng(0))
    xt = torch.from_numpy(x).cuda()
    yt = torch.empty_like(xt)
    with np.errstate(all="ignore"):
        refs = {"log2": np.log2(x.astype(np.float64)), "recip": 1.0 / x.astype(np.float64)}
    rows = []
    for which, (name, fn) in enumerate([("em_lg2", "log2"), ("log2f", "log2"), ("em_rcp", "recip"), ("1.0f / x", "recip")]):
        launch(st, LaunchConfig(grid=(x.size + 255) // 256, block=256), k, yt.data_ptr(), xt.data_ptr(),
               np.int32(x.size), np.int32(which))
        torch.cuda.synchronize()
        y = yt.cpu().numpy()
        e = ulp_err(y, refs[fn])
        with np.errstate(all="ignore"):
            absd = np.where(np.isfinite(refs[fn]) & np.isfinite(y), np.abs(y - refs[fn]), 0)
        i, j = int(np.argmax(e)), int(np.argmax(absd))
        r = {"function": name, "max_ulp": float(e[i]), "at": float(x[i]), "mean_ulp": float(np.mean(e[np.isfinite(e)])),
             "max_abs": float(absd[j]), "max_abs_at": float(x[j]), "inputs": int(x.size)}
        rows.append(r)
        print(json.dumps(r), flush=True)
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
