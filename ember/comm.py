"""The process's communicator: what a collective node (ember/primitives/collective.py) sums or
gathers over.

Ember runs a sharded model SPMD: one process per rank, each compiling and running its own program
(its shard of the weights, the same kernels), the programs meeting at their collectives in the same
order. The communicator is process-wide, like torch.distributed's default group: `ember.distributed
.init()` installs one backed by torch.distributed (gloo, for the host and the CPU), and the CUDA
executor builds its NCCL communicator from it (ember/backends/nccl.py). Without one, a process is a
world of one and every collective is the identity.

The reference (ember/reference.py) and the CPU executor reduce numpy arrays through it; they call it
collectively, so every rank must evaluate the same collectives in the same order."""
from __future__ import annotations

import numpy as np


class CommError(RuntimeError):
    """A collective that cannot run here (no communicator of the program's world size)."""


class Communicator:
    """A world of one process (the default): every collective is the identity."""

    rank, world = 0, 1

    def all_reduce(self, a: np.ndarray) -> np.ndarray:
        """The elementwise sum of `a` over the ranks (every rank gets it)."""
        return a

    def all_gather(self, a: np.ndarray) -> np.ndarray:
        """The ranks' arrays concatenated along axis 0, in rank order."""
        return a

    def start(self, kind: str, src: np.ndarray, dst: np.ndarray) -> "Pending":
        """Begin `kind` ("all_reduce" | "all_gather") of src into dst; the result is in dst once the
        returned handle's wait() returns. A world of one (and any communicator without its own
        asynchronous form) completes it here."""
        dst[...] = self.all_reduce(src) if kind == "all_reduce" else self.all_gather(src)
        return Pending()

    def broadcast_bytes(self, payload: bytes | None, root: int = 0) -> bytes:
        """Rank `root`'s bytes on every rank (an NCCL unique id)."""
        return payload

    def barrier(self) -> None:
        pass


class Pending:
    """A collective in flight (Communicator.start); this one is already complete."""

    def wait(self) -> None:
        pass


_CURRENT: Communicator = Communicator()


def current() -> Communicator:
    return _CURRENT


def set_current(c: Communicator | None) -> Communicator:
    """Install `c` (None: a world of one) as the process's communicator; returns the previous one."""
    global _CURRENT
    old, _CURRENT = _CURRENT, (c if c is not None else Communicator())
    return old


def require(world: int) -> Communicator:
    """The communicator, checked to have `world` ranks (a program built for 2 ranks run by 1 process
    would otherwise compute half a sum)."""
    c = _CURRENT
    if c.world != world:
        raise CommError(f"this program's collectives span {world} ranks, but the process's communicator has "
                        f"{c.world} (start the ranks with ember.distributed.init(), torchrun or --tp {world})")
    return c
