"""Running one sharded program per process: the process group, the communicator, the launcher.

    ember.distributed.init()             # under torchrun (or `ember generate --tp N`): RANK, WORLD_SIZE...
    llm = ember.llm.load(path, device=ember.distributed.device())   # this rank's shard

`init` joins torch.distributed's process group (gloo: the host's messages and the CPU's collectives)
and installs a communicator over it as the process's (ember/comm.py), so the reference and the CPU
executor reduce through gloo. On the GPU the executor runs its collectives with NCCL itself
(ember/backends/nccl.py), bootstrapped through this communicator. docs/distributed.md says why.
"""
from __future__ import annotations

import os

import numpy as np

from ..comm import Communicator, current, set_current

__all__ = ["init", "shutdown", "rank", "world", "device", "gpu_count", "TorchCommunicator", "launch", "launch_cli", "exit_rank"]


class TorchCommunicator(Communicator):
    """The process's communicator over torch.distributed's default group (gloo)."""

    def __init__(self):
        import torch.distributed as dist
        self.dist = dist
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    @staticmethod
    def _bytes(a: np.ndarray):
        """a's bytes as a torch uint8 tensor (every dtype travels through gloo this way, exactly:
        gloo has no bool, bfloat16 or, for gathers, float16)."""
        import torch
        a = np.ascontiguousarray(a)
        return torch.from_numpy(np.array(a.reshape(-1).view(np.uint8), copy=True))

    @staticmethod
    def _joined(parts: list, like: np.ndarray) -> np.ndarray:
        """The ranks' byte tensors as one array: like's dtype, concatenated along axis 0."""
        flat = np.concatenate([p.numpy() for p in parts]).view(like.dtype)
        return flat.reshape((len(parts) * like.shape[0],) + like.shape[1:])

    def all_reduce(self, a: np.ndarray) -> np.ndarray:
        import torch
        if a.dtype not in (np.float32, np.float64, np.int32, np.int64):
            raise TypeError(f"all_reduce of {a.dtype} through gloo: sum it in float32")
        t = torch.from_numpy(np.array(a, copy=True))  # (gloo sums in place)
        self.dist.all_reduce(t)
        return t.numpy()

    def all_gather(self, a: np.ndarray) -> np.ndarray:
        import torch
        t = self._bytes(a)
        parts = [torch.empty_like(t) for _ in range(self.world)]
        self.dist.all_gather(parts, t)
        return self._joined(parts, np.asarray(a))

    def start(self, kind: str, src: np.ndarray, dst: np.ndarray):
        """The collective in flight on gloo's threads while the caller computes (async_op); dst
        receives it by wait()."""
        import torch
        if kind == "all_reduce":
            native = dst.dtype in (np.float32, np.float64, np.int32, np.int64)
            buf = dst if native else np.empty(dst.shape, np.float32)
            buf[...] = src
            work = self.dist.all_reduce(torch.from_numpy(buf.reshape(-1)), async_op=True)
            return _Pending(work, None if native else (buf, dst))
        t = self._bytes(src)
        parts = [torch.empty_like(t) for _ in range(self.world)]
        work = self.dist.all_gather(parts, t, async_op=True)
        return _Pending(work, None, (parts, dst, src))

    def broadcast_bytes(self, payload: bytes | None, root: int = 0) -> bytes:
        import torch
        box = [payload]
        self.dist.broadcast_object_list(box, src=root, device=torch.device("cpu"))
        return box[0]

    def barrier(self) -> None:
        self.dist.barrier()


class _Pending:
    def __init__(self, work, cast=None, gather=None):
        self.work, self.cast, self.gather = work, cast, gather

    def wait(self) -> None:
        self.work.wait()
        if self.cast is not None:  # (a half-float sum, done in float32)
            buf, dst = self.cast
            dst[...] = buf.astype(dst.dtype)
        if self.gather is not None:
            parts, dst, src = self.gather
            dst[...] = TorchCommunicator._joined(parts, src)


def init(rank: int | None = None, world_size: int | None = None, timeout_s: float = 600.0) -> Communicator:
    """Join the process group (torchrun's environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
    or the arguments) and make it the process's communicator. A world of one needs no group."""
    import datetime

    rank = int(os.environ.get("RANK", 0)) if rank is None else rank
    world_size = int(os.environ.get("WORLD_SIZE", 1)) if world_size is None else world_size
    if world_size == 1:
        set_current(None)
        return current()
    import torch.distributed as dist
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        if "MASTER_PORT" not in os.environ:
            raise RuntimeError("ember.distributed.init: MASTER_PORT is not set (start the ranks with torchrun or "
                               "ember.distributed.launch)")
        import torch
        # gloo carries Ember's own messages (host arrays); with GPUs, torch code in the same processes
        # (a baseline, a DTensor model) gets NCCL for its CUDA tensors from the same group
        backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend, rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=timeout_s))
    set_current(TorchCommunicator())
    return current()


def shutdown() -> None:
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        try:  # every rank done with the group before any tears it down (a rank leaving while a peer's
            dist.barrier()  # last transfer is in flight aborted that peer at exit, 'terminate called')
        except Exception:  # noqa: BLE001 - a peer already gone: tear down regardless
            pass
        dist.destroy_process_group()
    set_current(None)


def exit_rank(code: int) -> None:
    """End a rank process: flush its output and leave without the interpreter's teardown. torch's
    c10d store, torn down by static destructors after Python's, aborted rank 0 now and then at exit
    ('terminate called without an active exception', exit -6) after its work was done and reported;
    a launched rank has nothing left to clean up that the OS does not."""
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def rank() -> int:
    return current().rank


def world() -> int:
    return current().world


def gpu_count() -> int:
    """CUDA devices visible to this process (0 without a driver)."""
    from ..backends.target import available
    if not available("cuda"):
        return 0
    from cuda.core import system
    n = getattr(system, "num_devices", None)
    return int(n() if callable(n) else n) if n is not None else int(system.get_num_devices())


def device(kind: str | None = None) -> str:
    """This rank's device: "cuda:LOCAL_RANK" where a GPU is present (or kind="cuda"), else "cpu"."""
    if kind is None:
        from ..backends.target import available
        kind = "cuda" if available("cuda") else "cpu"
    if kind == "cpu":
        return "cpu"
    return f"cuda:{int(os.environ.get('LOCAL_RANK', current().rank))}"


from .launch import launch, launch_cli  # noqa: E402
