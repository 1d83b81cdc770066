"""The hot path of a call from PyTorch that repeats its input pointers: what it may skip.

KernelBench's protocol (and any caller that waits for its result) starts each call on an idle GPU, so every
microsecond of host work before the graph launch shows on the device's clock. Measured on an H200's host
(bench/call_path_profile.py, gpu-session45): an Ember call 19.5 us of host time against 6.0 for the replay
alone, 3.9 of it `torch.empty_like` for the output; eager's latency from an idle device 13-24 us.

Two things come off that path here:

* **Outputs the caller has dropped are reused.** The last call's output tensors stay with the executor; when
  the caller holds no reference to them any more — no Python reference, no view or alias of their storage,
  no DLPack export (`outputs_free`) — the next call with the same inputs writes into them again and replays
  the same CUDA graph with no allocation and no graph lookup. A caller that keeps its results gets fresh
  tensors as before. (torch's caching allocator would hand the same block back anyway; this skips asking.)
* **The graph launch through ctypes** (the default; `EMBER_GRAPH_LAUNCH=bindings` goes through cuda.bindings):
  libcuda's cuGraphLaunch called with two raw pointers, without cuda.bindings' argument objects and result
  enum: 3.5-4.1 against 5.0-5.4 us a replay on the H200's host, in the same runs (gpu-session45 c/).
"""
from __future__ import annotations

import ctypes
import functools
import os
from sys import getrefcount


_BASE: list = []  # what outputs_free sees for a tensor only the memo holds, measured once (see _calibrate)


def outputs_free(outs: tuple, calibrating: bool = False):
    """Whether nothing outside the executor's memo (the tuple `outs`) refers to these tensors or their
    memory — no Python reference, no other TensorImpl (a view, a detached alias), no DLPack export, no held
    storage object: then writing them again cannot change a tensor the caller can still see."""
    base = None if calibrating else _BASE[0] if _BASE else _calibrate()
    for o in outs:
        st = o.untyped_storage()
        # Python references, TensorImpl uses, StorageImpl uses, references to the storage's Python object
        seen = (getrefcount(o), o._use_count(), _storage_uses(st._cdata), getrefcount(st))
        if calibrating:
            return seen
        if seen != base:
            return False
    return True


def _calibrate() -> tuple:
    """The counts of a tensor only a tuple holds, seen through outputs_free's own loop on this interpreter
    (a Python whose loop variables are borrowed would count one reference fewer)."""
    global _storage_uses
    import torch
    _storage_uses = torch._C._storage_Use_Count
    _BASE.append(outputs_free((torch.empty(1),), calibrating=True))
    return _BASE[0]


_storage_uses = None


def graph_launch_mode() -> str:
    return os.environ.get("EMBER_GRAPH_LAUNCH", "ctypes")


@functools.lru_cache(maxsize=None)
def ctypes_graph_launch():
    """libcuda's cuGraphLaunch(CUgraphExec, CUstream) -> CUresult as a ctypes function of two pointers, or
    None where the driver library cannot be opened by that name (then cuda.bindings launches)."""
    try:
        f = ctypes.CDLL("libcuda.so.1").cuGraphLaunch
    except (OSError, AttributeError):
        return None
    f.argtypes, f.restype = (ctypes.c_void_p, ctypes.c_void_p), ctypes.c_int
    return f
