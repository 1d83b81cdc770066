"""NCCL for a sharded program's collectives on the GPU, called through ctypes.

Why the NCCL library itself and not torch.distributed's NCCL process group: Ember's programs run as
CUDA graphs (cuda.core), and an NCCL call made on a stream being captured becomes nodes of that graph,
so a decode step with its 2 all-reduces per layer stays one graph launch; a call costs ~2 us of host
time through ctypes against torch's ~15-30 us per collective with its work objects and watchdog, and
Ember runs on CUDA without torch. torch.distributed is still the bootstrap: its group (gloo) hands
rank 0's NCCL unique id to the others (ember/comm.py `broadcast_bytes`).

The library is the one the `nvidia-nccl-cu12`/`-cu13` wheel installs (torch's CUDA builds depend on
it), or any libnccl.so.2 the loader finds."""
from __future__ import annotations

import ctypes
import glob
import os

from .. import dtypes as dt

_TYPES = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5, "float16": 6,
          "float32": 7, "float64": 8, "bfloat16": 9}
SUM = 0


class NCCLError(RuntimeError):
    pass


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def _find_library() -> str:
    try:
        import nvidia
        for root in nvidia.__path__:
            hits = sorted(glob.glob(os.path.join(root, "nccl", "lib", "libnccl.so*")))
            hits += sorted(glob.glob(os.path.join(root, "cu*", "lib", "libnccl.so*")))
            if hits:
                return hits[0]
    except ImportError:
        pass
    return "libnccl.so.2"


_LIB = None


def library():
    global _LIB
    if _LIB is None:
        path = _find_library()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise NCCLError(f"NCCL library not found ({path}: {e}); install nvidia-nccl-cu12 or -cu13") from None
        lib.ncclGetErrorString.restype = ctypes.c_char_p
        lib.ncclGetUniqueId.argtypes = [ctypes.POINTER(_UniqueId)]
        lib.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, _UniqueId, ctypes.c_int]
        lib.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                      ctypes.c_void_p, ctypes.c_void_p]
        lib.ncclAllGather.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                      ctypes.c_void_p, ctypes.c_void_p]
        lib.ncclCommDestroy.argtypes = [ctypes.c_void_p]
        _LIB = lib
    return _LIB


def _check(code: int, what: str) -> None:
    if code:
        raise NCCLError(f"NCCL {what} failed: {library().ncclGetErrorString(code).decode()} (code {code})")


def version() -> str:
    v = ctypes.c_int()
    _check(library().ncclGetVersion(ctypes.byref(v)), "ncclGetVersion")
    return str(v.value)


class NCCLComm:
    """One NCCL communicator over the process's ranks (ember/comm.py), on the current device."""

    def __init__(self, comm):
        lib = library()
        # every connection made at init: NCCL's lazy connect would set them up (allocating) in the first
        # collective, and that one is captured into a CUDA graph
        os.environ.setdefault("NCCL_RUNTIME_CONNECT", "0")
        uid = _UniqueId()
        if comm.rank == 0:
            _check(lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        # (the whole 128 bytes: reading the c_char array field would stop at its first zero byte)
        raw = comm.broadcast_bytes(ctypes.string_at(ctypes.addressof(uid), 128) if comm.rank == 0 else None)
        ctypes.memmove(ctypes.addressof(uid), raw, 128)
        self.handle = ctypes.c_void_p()
        _check(lib.ncclCommInitRank(ctypes.byref(self.handle), comm.world, uid, comm.rank), "ncclCommInitRank")
        self.rank, self.world = comm.rank, comm.world

    def run(self, kind: str, src: int, dst: int, count: int, dtype: dt.DType, stream: int) -> None:
        """Enqueue the collective on `stream` (a raw handle: captured when that stream is capturing).
        count: elements each rank sends."""
        lib, t = library(), _TYPES.get(dtype.name)
        if t is None:
            raise NCCLError(f"no NCCL type for {dtype.name}")
        if kind == "all_reduce":
            _check(lib.ncclAllReduce(src, dst, count, t, SUM, self.handle, stream), "ncclAllReduce")
        else:
            _check(lib.ncclAllGather(src, dst, count, t, self.handle, stream), "ncclAllGather")


_COMMS: dict = {}


def communicator(device_index: int, world: int) -> NCCLComm:
    """The process's NCCL communicator on one device (made once, collectively: every rank's first
    collective program builds it at the same point)."""
    from ..comm import require
    comm = require(world)
    key = (device_index, world, id(comm))
    c = _COMMS.get(key)
    if c is None:
        c = _COMMS[key] = NCCLComm(comm)
    return c
