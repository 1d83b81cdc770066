"""Serving a tensor-parallel model (`ember serve PATH --tp N`): rank 0 runs the HTTP server and the
engine; every step it takes on its batch (a join with its prompt and sampling, a decode step, a
row leaving) is first broadcast to the other ranks, which replay it on their own shard's batch
(`follow`), so the N programs meet at the same collectives with the same tokens.

A request without a seed gets one drawn on rank 0 (each rank samples the same token from the same
gathered logits only with the same generator)."""
from __future__ import annotations

import pickle
import secrets

from ..llm.continuous import ContinuousBatch


class MirroredBatch(ContinuousBatch):
    """Rank 0's batch: each join / step / leave is told to the other ranks before it runs here."""

    def __init__(self, llm, size: int, comm):
        super().__init__(llm, size)
        self.comm = comm

    def _tell(self, *command) -> None:
        self.comm.broadcast_bytes(pickle.dumps(command))

    def join(self, key, prompt, params) -> int:
        if params.seed is None:
            params = params._replace(seed=secrets.randbits(63))
        self._tell("join", prompt, params)
        return super().join(key, prompt, params)

    def launch(self, after=None):
        if after is not None:  # (the other ranks replay whole steps: no step ahead under --tp)
            return None
        self._tell("step")
        return super().launch()

    def leave(self, j: int) -> None:
        self._tell("leave", j)
        super().leave(j)

    def close(self) -> None:
        self._tell("stop")


def follow(llm, size: int, comm) -> None:
    """A rank other than 0: replay rank 0's batch steps until it stops. A step that fails here
    failed on rank 0 as well (same programs, same inputs): it is skipped as rank 0 skips it."""
    batch = ContinuousBatch(llm, size)
    llm.program("prefill", 1)  # the programs rank 0's engine compiles before serving, in its order
    for n in batch.buckets():
        llm.program("decode", n)
    while True:
        command = pickle.loads(comm.broadcast_bytes(None))
        op, args = command[0], command[1:]
        if op == "stop":
            return
        try:
            if op == "join":
                batch.join(None, *args)
            elif op == "step":
                batch.step()
            elif op == "leave":
                batch.leave(*args)
        except Exception:  # noqa: BLE001 - mirrored: rank 0 reports it to its client
            continue
