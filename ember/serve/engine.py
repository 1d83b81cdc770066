"""The serving engine: one thread owns the LLM and runs a continuous batch of requests.

Requests wait in a bounded queue. Between decode steps the engine lets waiting requests join the
running batch (`ember/llm/continuous.py`: a batch-1 prefill into a free cache row), in arrival
order, while they fit (a free row, the prompt no longer than the batch's slot counter, the budget
within the cache); then one decode step for every row, each row sampled with its own parameters,
and every token handed to its request's asyncio queue as it comes. Rows leave on a stop id, their
token budget or a cancel (a stop string, a timeout, a disconnect). Programs: one batch-1 prefill and
a decode program per power-of-two row count up to `max_batch` (a step computes only the active rows'
span), compiled before serving. A failing step fails the running rows'
requests only; the engine goes on."""
from __future__ import annotations

import asyncio
import collections
import threading
import time
from dataclasses import dataclass, field

import numpy as np


class QueueFull(Exception):
    """The queue holds max_queue requests already."""


class ShuttingDown(Exception):
    """The engine is stopping and takes no new requests."""


@dataclass
class Request:
    prompt: np.ndarray
    params: object  # ember.llm.sampling.Sampling
    loop: asyncio.AbstractEventLoop
    events: asyncio.Queue = field(default_factory=asyncio.Queue)
    cancelled: bool = False
    created: float = field(default_factory=time.perf_counter)

    def deliver(self, kind: str, value=None) -> None:
        """From the engine thread: ("token", id), ("done", finish reason) or ("error", message)."""
        self.loop.call_soon_threadsafe(self.events.put_nowait, (kind, value))


class Engine:
    def __init__(self, llm, max_batch: int = 8, max_queue: int = 64, metrics=None, batch=None):
        from ..llm.continuous import ContinuousBatch
        self.llm, self.max_batch, self.max_queue, self.metrics = llm, max_batch, max_queue, metrics
        self.batch = batch or ContinuousBatch(llm, max_batch)  # (serve/ranks.py MirroredBatch under --tp)
        self.waiting: collections.deque = collections.deque()
        self.cond = threading.Condition()
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, name="ember-serve-engine", daemon=True)

    def start(self) -> None:
        """Compile the programs before the first request (a compile mid-traffic stalls every
        request; the program cache makes restarts quick), then run."""
        self.llm.program("prefill", 1)
        for n in self.batch.buckets():
            self.llm.program("decode", n)
        self.thread.start()

    def submit(self, req: Request) -> None:
        with self.cond:
            if self.stopping:
                raise ShuttingDown("the server is shutting down")
            if len(self.waiting) >= self.max_queue:
                raise QueueFull(f"the queue is full ({self.max_queue} requests waiting)")
            self.waiting.append(req)
            self._gauge()
            self.cond.notify()

    def stop(self, timeout: float = 30.0) -> None:
        """Take no new requests, fail the waiting ones, let the running rows finish."""
        with self.cond:
            self.stopping = True
            left = list(self.waiting)
            self.waiting.clear()
            self.cond.notify_all()
        for r in left:
            r.deliver("error", "the server is shutting down")
        if self.thread.is_alive():
            self.thread.join(timeout)
        close = getattr(self.batch, "close", None)
        if close is not None:  # (the other ranks of a tensor-parallel server stop with it)
            close()

    def _gauge(self) -> None:
        if self.metrics is not None:
            self.metrics.queue_depth.set(len(self.waiting))
            self.metrics.batch_size.set(self.batch.active)

    def _next(self):
        """The head of the queue if it fits the running batch now (arrival order: no overtaking)."""
        with self.cond:
            while self.waiting and self.waiting[0].cancelled:
                self.waiting.popleft()
            if self.stopping or not self.waiting:
                return None
            r = self.waiting[0]
            if not self.batch.fits(len(r.prompt), r.params.max_new_tokens):
                return None
            self.waiting.popleft()
            return r

    def _retire(self) -> None:
        b = self.batch
        for j, row in enumerate(b.rows):
            if row is None:
                continue
            if row.key.cancelled:
                row.cancelled = True
            if b.finished(j):
                req = row.key
                req.deliver("done", "stop" if row.cancelled or row.last in row.params.stop else "length")
                b.leave(j)

    def _loop(self) -> None:
        """Join what fits, step, retire. While every row is greedy and nobody waits, the next step is
        launched before the current one's tokens are read (llm/continuous.py), so the GPU does not
        wait for the host between steps."""
        b = self.batch
        pending = None  # a launched step whose tokens are not read yet
        while True:
            r = self._next()
            if r is not None and pending is not None:  # a join waits for the step in flight
                pending = self._collect(pending)
            while r is not None:
                try:
                    r.deliver("token", b.join(r, r.prompt, r.params))
                except Exception as e:  # noqa: BLE001 - one request's failure is its own
                    r.deliver("error", f"{type(e).__name__}: {e}")
                r = self._next()
            self._retire()
            self._gauge()
            if not b.active:
                if pending is not None:  # (its rows all left: its tokens are nobody's)
                    pending = self._collect(pending)
                    continue
                with self.cond:
                    if self.stopping:
                        return
                    if not self.waiting:
                        self.cond.wait()
                continue
            try:
                if pending is None:
                    pending = b.launch()
                ahead = b.launch(after=pending) if b.greedy() and not self.waiting else None
                self._collect(pending, ahead is None)
                pending = ahead
            except Exception as e:  # noqa: BLE001 - a failing step fails the running rows, not the server
                pending = None
                for j, row in enumerate(b.rows):
                    if row is not None:
                        row.key.deliver("error", f"{type(e).__name__}: {e}")
                        b.leave(j)
            self._retire()

    def _collect(self, pending, last: bool = True):
        """Deliver a launched step's tokens; returns None (the step is done with)."""
        for _, req, tok in self.batch.collect(pending):
            req.deliver("token", tok)
        if last:
            self._retire()
        return None
