"""Host latency of one call, by launch path (not a test).

A tiny ReLU (4096 floats) makes the kernel itself ~2 us, so the CUDA-event time around one call is the
latency from the call to the kernel's end: what bench/kernelbench.py adds to every problem on top of
its kernels. Variants: PyTorch eager; Ember's call as shipped; a CUDA graph replay of the same kernel with
torch.empty_like; a direct cuda.core launch; a cuLaunchKernel through cuda.bindings and through ctypes
with the same kernel; and the pieces (torch.empty, the frontend's checks) timed alone in a tight loop.

Usage: python bench/launch_latency.py [--numel N] [--flush] [--out FILE]"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time

import torch
from ember.frontends import pytorch as fe

sys.path.insert(0, os.path.dirname(__file__))
from kernel_vs_host import event_us  # noqa: E402
from overhead import wall_us as loop_us  # noqa: E402


def ctypes_launch(kernel_handle: int, grid, block, smem: int, args: list, hold_gil: bool):
    """A launch of fixed arguments through libcuda's cuLaunchKernel called by ctypes (kernel-parameter
    array built once): what a C-level launcher would cost at best from Python."""
    lib = (ctypes.PyDLL if hold_gil else ctypes.CDLL)("libcuda.so.1")
    f = lib.cuLaunchKernel
    u = ctypes.c_uint
    f.argtypes = [ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    f.restype = ctypes.c_int
    cells = [ctypes.c_uint64(a) for a in args]
    params = (ctypes.c_void_p * len(cells))(*[ctypes.addressof(c) for c in cells])
    stream = torch.cuda.current_stream().cuda_stream
    head = (kernel_handle, *grid, *block, smem, stream, params, None)

    def call():
        rc = f(*head)
        if rc:
            raise RuntimeError(f"cuLaunchKernel returned {rc}")
    call._keep = (cells, params)
    return call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--numel", type=int, default=4096, help="ReLU size (8192*16384: KernelBench's 10_relu)")
    ap.add_argument("--flush", action="store_true", help="flush L2 before each event-timed call, as kernelbench.py")
    a = ap.parse_args()
    x = torch.randn(a.numel, device="cuda")
    flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda") if a.flush else None

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)

    m = M()
    with torch.no_grad():
        fn = fe.TorchFunction(m, fe.import_graph(fe.export(m, (x,))), "cuda")
    prog = fn.program
    ex = prog.executor
    fn(x)
    fn(x)
    ex.pointers(prog, None, {}, {})
    ptrs = dict(ex._ptrs[()])
    (cfg, kern, args), = ex._launch_args(prog, {**ptrs, "in_x": x.data_ptr(), prog.outputs[0]: 0}, {})
    from cuda.core import launch
    stream = ex._torch_stream()
    out_spec = (tuple(x.shape), torch.float32, x.device)

    def direct():
        o = torch.empty(*out_spec[:1], dtype=torch.float32, device=x.device)
        launch(stream, cfg, kern, x.data_ptr(), o.data_ptr())
        return o

    from cuda.bindings import driver
    handle = driver.CUfunction(int(kern.handle))  # a CUkernel is accepted where a CUfunction is
    grid, block, smem = cfg.grid, cfg.block, cfg.shmem_size
    s_handle = int(stream.handle)
    types = (ctypes.c_void_p, ctypes.c_void_p)
    nargs = len(args)

    def raw():
        o = torch.empty(*out_spec[:1], dtype=torch.float32, device=x.device)
        vals = (x.data_ptr(), o.data_ptr()) + tuple(args[2:])
        driver.cuLaunchKernel(handle, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem, s_handle,
                              (vals, types + tuple(ctypes.c_int64 for _ in range(nargs - 2))), 0)
        return o

    out_keep = torch.empty_like(x)
    fixed = [x.data_ptr(), out_keep.data_ptr()] + [int(a) for a in args[2:]]
    ctypes_variants = [ctypes_launch(h, grid, block, smem, fixed, gil)
                       for h, gil in ((int(kern.handle), False), (int(kern.handle), True))]
    feed = {"x": x}
    g = ex._graph(prog, {**ptrs, "in_x": x.data_ptr(), prog.outputs[0]: out_keep.data_ptr()}, {})
    g_handle = g.handle if hasattr(g, "handle") else g._handle
    dev = x.device
    shape = (a.numel,)
    rows = {}
    for name, call in [("piece: torch.empty(shape, dtype, device obj)", lambda: torch.empty(shape, dtype=torch.float32, device=dev)),
                       ("piece: x.new_empty(shape)", lambda: x.new_empty(shape)),
                       ("piece: torch.empty_like(x)", lambda: torch.empty_like(x)),
                       ("piece: cuda.core Graph.launch", lambda: g.launch(stream)),
                       ("piece: ctypes cuLaunchKernel (CDLL)", ctypes_variants[0]),
                       ("piece: ctypes cuLaunchKernel (PyDLL, GIL held)", ctypes_variants[1]),
                       ("piece: driver.cuGraphLaunch", lambda: driver.cuGraphLaunch(g_handle, s_handle)),
                       ("piece: executor._torch_stream()", ex._torch_stream),
                       ("piece: t.shape == s and dtype and is_cuda and is_contiguous",
                        lambda: x.shape == shape and x.dtype == torch.float32 and x.is_cuda and x.is_contiguous())]:
        try:
            rows[name] = {"loop_us": round(loop_us(call), 2)}
        except Exception as e:  # noqa: BLE001
            rows[name] = {"error": f"{type(e).__name__}: {e}"}
        print(name, rows[name], flush=True)
    for name, call in [("eager relu", lambda: torch.relu(x)),
                       ("ember call (as shipped)", lambda: fn(x)),
                       ("ember program.call_checked", lambda: prog.call_checked(feed)),
                       ("graph launch + torch.empty_like", lambda: (torch.empty_like(x), g.launch(stream))),
                       ("cuda.core launch + torch.empty", direct),
                       ("raw cuLaunchKernel + torch.empty", raw),
                       ("torch.empty alone", lambda: torch.empty(a.numel, dtype=torch.float32, device=x.device)),
                       ("frontend _feed alone", lambda: fn._feed((x,), {}))]:
        try:
            rows[name] = {"event_us": round(event_us(call, flush=flush), 2), "loop_us": round(loop_us(call), 2)}
        except Exception as e:  # noqa: BLE001
            rows[name] = {"error": f"{type(e).__name__}: {e}"}
        print(name, rows[name], flush=True)
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "numel": a.numel, "flush": a.flush, "rows": rows}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
