"""A program's named dimensions in device memory, read by its kernels at launch.

A kernel that takes dims (a KV cache's filled length P, a prompt's length T) reads them from a small
device array (`const long long* em_dims_`, codegen/cuda.py) instead of taking them by value. Its
arguments then stay the same for every binding, so a CUDA graph replays a new position without
touching its kernel nodes: a decode step's graph had ~50 nodes updated per token from Python
(~0.75 ms of host time a step, more than the GPU's step on some hosts:
bench/results/decode-timeline-h100-2026-11-26.host.txt), and the one-step-ahead generation loop was
bound by it. Only nodes whose *grid* follows a dim (or whose TMA maps do) are still updated.

Every launch with dims owns a slice of one device buffer (its dims in its kernel's order). Before a
run the executor writes the binding's values there with one asynchronous copy on the run's stream,
from a ring of pinned host slots: the copy reads its slot when the stream reaches it, which may be
after the host has queued later steps, so a slot is reused only after RING later writes and a wait
for the device to drain (once per RING writes: a generation loop queues one or two steps ahead). The
copy is skipped when the values and stream are those of the last write."""
from __future__ import annotations

import ctypes

import numpy as np

RING = 256  # pinned slots: writes queued ahead of the GPU before a slot is reused


class DeviceDims:
    def __init__(self, program, alloc):
        self.offsets: dict = {}  # launch index -> first slot
        names: list = []
        for i, l in enumerate(program.launches):
            if l.dims and not l.collective:
                self.offsets[i] = len(names)
                names += list(l.dims)
        self.names = tuple(names)
        self.nbytes = 8 * len(names)
        self.buf = alloc(self.nbytes) if names else None
        self.ptr = int(self.buf.handle) if names else 0
        self._host = None
        self._next = 0
        self._last: tuple | None = None

    def pointer(self, index: int) -> int:
        """The device address launch `index` reads its dims from."""
        return self.ptr + 8 * self.offsets[index]

    def write(self, env: dict, stream: int) -> None:
        """Queue the binding's dims on `stream` (a raw CUstream handle) before the run's launches."""
        if not self.names:
            return
        vals = tuple(int(env[d]) for d in self.names)
        if self._last == (vals, stream):
            return
        from cuda.bindings import driver
        if self._host is None:
            err, p = driver.cuMemAllocHost(self.nbytes * RING)
            _ok((err,), "allocating pinned memory for the program's dims")
            self._hostp = int(p)
            self._host = np.ctypeslib.as_array((ctypes.c_int64 * (len(self.names) * RING)).from_address(self._hostp))
        slot = self._next
        self._next = (self._next + 1) % RING
        if slot == 0 and self._last is not None:  # every slot may still be queued: let them all land
            _ok(driver.cuCtxSynchronize(), "waiting before reusing the dims ring")
        n = len(self.names)
        self._host[slot * n:(slot + 1) * n] = vals
        _ok(driver.cuMemcpyHtoDAsync(self.ptr, self._hostp + slot * self.nbytes, self.nbytes, stream),
            "writing the program's dims")
        self._last = (vals, stream)

    def __del__(self):
        if getattr(self, "_host", None) is not None:
            try:
                from cuda.bindings import driver
                driver.cuMemFreeHost(self._hostp)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


def _ok(res, what: str) -> None:
    from cuda.bindings import driver
    if res[0] != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA error {res[0]} {what}")
