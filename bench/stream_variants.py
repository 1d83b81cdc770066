"""Streaming-kernel variants, hand-written, timed against PyTorch on the GPU (not a test).

Question it answers: can a generated elementwise or row-reduction kernel beat PyTorch's on a
memory-bound op (y = relu(x), y = x.sum(-1)) on this device, and with which shape of kernel
(threads per block, 16-byte vectors per thread, cache hints, grid-stride or one pass)? Each variant
is compiled with NVRTC, launched with cuda.core on torch's stream, checked against torch, and timed
with CUDA events (median of repeats, back-to-back launches and single launches).

Usage: python bench/stream_variants.py [--out FILE] [--rows 8192 --cols 16384]"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MAP = r"""
extern "C" __global__ void __launch_bounds__(T) relu_v(float* __restrict__ y, const float* __restrict__ x, long long n4) {
  // n4 16-byte vectors; each thread handles U of them, U*T*gridDim.x apart per grid step
  long long base = (long long)blockIdx.x * (T * U) + threadIdx.x;
  const long long step = (long long)gridDim.x * (T * U);
  for (; base < n4; base += step) {
    float4 v[U];
    #pragma unroll
    for (int u = 0; u < U; ++u) {
      long long i = base + (long long)u * T;
      if (i < n4) v[u] = LOAD(reinterpret_cast<const float4*>(x) + i);
    }
    #pragma unroll
    for (int u = 0; u < U; ++u) {
      long long i = base + (long long)u * T;
      if (i < n4) {
        float4 r = v[u];
        r.x = r.x < 0.f ? 0.f : r.x; r.y = r.y < 0.f ? 0.f : r.y;
        r.z = r.z < 0.f ? 0.f : r.z; r.w = r.w < 0.f ? 0.f : r.w;
        STORE(reinterpret_cast<float4*>(y) + i, r);
      }
    }
    if (!GRIDSTRIDE) break;
  }
}
"""

ROWSUM = r"""
extern "C" __global__ void __launch_bounds__(T) rowsum_v(float* __restrict__ y, const float* __restrict__ x, int rows, int cols4) {
  // one warp per row (T/32 rows per block); U 16-byte vectors in flight per lane
  const int lane = threadIdx.x & 31;
  for (int row = blockIdx.x * (T / 32) + (threadIdx.x >> 5); row < rows; row += gridDim.x * (T / 32)) {
    const float4* xr = reinterpret_cast<const float4*>(x) + (long long)row * cols4;
    float acc = 0.f;
    for (int c = lane; c < cols4; c += 32 * U) {
      float4 v[U];
      #pragma unroll
      for (int u = 0; u < U; ++u) v[u] = (c + 32 * u < cols4) ? LOAD(xr + c + 32 * u) : make_float4(0.f, 0.f, 0.f, 0.f);
      #pragma unroll
      for (int u = 0; u < U; ++u) acc += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
  }
}
"""

LOADS = {"plain": "(*(p))", "ldg": "__ldg(p)", "ldcs": "__ldcs(p)", "ldlu": "__ldlu(p)"}
STORES = {"plain": "(*(p) = (v))", "stcs": "__stcs(p, v)", "stwt": "__stwt(p, v)"}


def build(src: str, name: str, defs: dict):
    from cuda.core import Device, Program, ProgramOptions
    head = "".join(f"#define {k} {v}\n" for k, v in defs.items())
    head += "#define LOAD(p) " + LOADS[defs.get("_load", "plain")] + "\n"
    head += "#define STORE(p, v) " + STORES[defs.get("_store", "plain")] + "\n"
    Device().set_current()
    prog = Program(head + src, "c++", ProgramOptions(arch="sm_90", std="c++17"))
    return prog.compile("cubin").get_kernel(name)


def stream():
    from cuda.core import Stream
    return Stream.from_handle(torch.cuda.current_stream().cuda_stream)


def event_ms(fn, reps: int, flush=None) -> float:
    ts = []
    for _ in range(3):
        fn()
    for t in range(reps):
        if flush is not None:
            flush.fill_(t)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1))
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=16384)
    ap.add_argument("--reps", type=int, default=40)
    a = ap.parse_args()
    from cuda.core import LaunchConfig, launch
    torch.manual_seed(0)
    x = torch.randn(a.rows, a.cols, device="cuda")
    y = torch.empty_like(x)
    s = torch.empty(a.rows, device="cuda")
    n4 = x.numel() // 4
    nbytes = 2 * x.numel() * 4
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    st = stream()
    rows = []

    def record(kind, name, ms, bytes_):
        r = {"kind": kind, "variant": name, "ms": round(ms, 4), "GBps": round(bytes_ / ms / 1e6, 1)}
        rows.append(r)
        print(json.dumps(r), flush=True)

    ref = torch.relu(x)
    record("relu", "torch.relu", event_ms(lambda: torch.relu(x), a.reps), nbytes)
    record("relu", "torch.clamp_min(out=)", event_ms(lambda: torch.clamp_min(x, 0, out=y), a.reps), nbytes)
    for T in (128, 256, 512):
        for U in (1, 2, 4):
            for ld, stv in (("plain", "plain"), ("ldg", "plain"), ("ldcs", "stcs"), ("plain", "stcs")):
                for gs in (0, 1):
                    grids = [-(-n4 // (T * U))] if not gs else [sms * (2048 // T), sms * (2048 // T) * 4]
                    for grid in grids:
                        name = f"T{T} U{U} {ld}/{stv} {'gridstride' if gs else 'onepass'} grid={grid}"
                        try:
                            k = build(MAP, "relu_v", {"T": T, "U": U, "GRIDSTRIDE": gs, "_load": ld, "_store": stv})
                        except Exception as e:
                            print("build failed", name, str(e)[:300])
                            continue
                        cfg = LaunchConfig(grid=grid, block=T)
                        y.fill_(float("nan"))
                        launch(st, cfg, k, y.data_ptr(), x.data_ptr(), np.int64(n4))
                        torch.cuda.synchronize()
                        if not torch.equal(y, ref):
                            print("WRONG", name)
                            continue
                        record("relu", name, event_ms(lambda: launch(st, cfg, k, y.data_ptr(), x.data_ptr(), np.int64(n4)), a.reps), nbytes)
    sref = x.sum(-1)
    record("rowsum", "torch.sum(-1)", event_ms(lambda: x.sum(-1), a.reps), x.numel() * 4)
    for T in (128, 256, 512):
        for U in (1, 2, 4, 8):
            for ld in ("plain", "ldg", "ldcs"):
                for grid in (-(-a.rows // (T // 32)), sms * (2048 // T)):
                    name = f"T{T} U{U} {ld} grid={grid}"
                    k = build(ROWSUM, "rowsum_v", {"T": T, "U": U, "_load": ld})
                    cfg = LaunchConfig(grid=grid, block=T)
                    args = (s.data_ptr(), x.data_ptr(), np.int32(a.rows), np.int32(a.cols // 4))
                    launch(st, cfg, k, *args)
                    torch.cuda.synchronize()
                    if not torch.allclose(s, sref, rtol=1e-4, atol=1e-3):
                        print("WRONG", name)
                        continue
                    record("rowsum", name, event_ms(lambda: launch(st, cfg, k, *args), a.reps), x.numel() * 4)
    for kind in ("relu", "rowsum"):
        best = sorted((r for r in rows if r["kind"] == kind), key=lambda r: r["ms"])[:8]
        print(kind, "best:", *[f"{r['variant']}: {r['ms']} ms" for r in best], sep="\n  ")
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "shape": [a.rows, a.cols], "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
