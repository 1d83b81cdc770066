"""The serving engine: one thread owns the LLM and runs batches of queued requests.

Requests wait in a bounded queue; the engine takes up to `max_batch` of them (waiting a few
milliseconds for more to arrive), runs them as one batch through `LLM.steps` (each with its own
sampling parameters, stop ids and token budget) and hands every token to its request's asyncio
queue as it comes. This is request-level batching: a request that arrives while a batch runs waits
for the next batch (continuous batching, joining a running batch between steps, needs a cache
position per row; see docs/serving.md). A failing batch fails its own requests only."""
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
    def __init__(self, llm, max_batch: int = 8, max_queue: int = 64, gather_s: float = 0.003, metrics=None):
        self.llm, self.max_batch, self.max_queue, self.gather_s = llm, max_batch, max_queue, gather_s
        self.metrics = metrics
        self.waiting: collections.deque = collections.deque()
        self.cond = threading.Condition()
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, name="ember-serve-engine", daemon=True)
        self.running_batch = 0

    def start(self) -> None:
        """Compile every batch bucket's programs before the first request (a compile mid-traffic
        stalls every waiting request; the program cache makes restarts quick), then run."""
        b = 1
        while True:
            for kind in ("prefill", "decode"):
                self.llm.program(kind, b)
            if b >= self.max_batch:
                break
            b = bucket(b + 1, self.max_batch)
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
        """Take no new requests, fail the waiting ones, let the running batch finish."""
        with self.cond:
            self.stopping = True
            left = list(self.waiting)
            self.waiting.clear()
            self.cond.notify_all()
        for r in left:
            r.deliver("error", "the server is shutting down")
        if self.thread.is_alive():
            self.thread.join(timeout)

    def _gauge(self) -> None:
        if self.metrics is not None:
            self.metrics.queue_depth.set(len(self.waiting))
            self.metrics.batch_size.set(self.running_batch)

    def _take(self) -> list:
        with self.cond:
            while not self.waiting and not self.stopping:
                self.cond.wait()
            if self.stopping:
                return []
        time.sleep(self.gather_s)  # let concurrent arrivals join this batch
        with self.cond:
            batch = []
            while self.waiting and len(batch) < self.max_batch:
                r = self.waiting.popleft()
                if not r.cancelled:
                    batch.append(r)
            self.running_batch = len(batch)
            self._gauge()
            return batch

    def _loop(self) -> None:
        while True:
            batch = self._take()
            if not batch:
                if self.stopping:
                    return
                continue
            self._run(batch)
            with self.cond:
                self.running_batch = 0
                self._gauge()

    def _run(self, batch: list) -> None:
        cancelled: set = set()
        last = [None] * len(batch)
        prompts, params = [r.prompt for r in batch], [r.params for r in batch]
        pad = bucket(len(batch), self.max_batch) - len(batch)  # batch sizes in powers of two: few compiles
        if pad:
            prompts += [np.zeros(1, np.int64)] * pad
            params += [batch[0].params._replace(max_new_tokens=1, temperature=0.0)] * pad
        try:
            for toks in self.llm.steps(prompts, params, cancelled):
                toks = toks[:len(batch)]
                for j, (r, t) in enumerate(zip(batch, toks)):
                    if r.cancelled:
                        cancelled.add(j)
                    if t is not None and j not in cancelled:
                        last[j] = t
                        r.deliver("token", t)
            for j, r in enumerate(batch):
                stopped = last[j] is not None and last[j] in r.params.stop
                r.deliver("done", "stop" if stopped or r.cancelled else "length")
        except Exception as e:  # noqa: BLE001 - a failing batch fails its requests, not the server
            for r in batch:
                r.deliver("error", f"{type(e).__name__}: {e}")


def bucket(n: int, cap: int) -> int:
    """The batch size a batch of n runs at: the next power of two, at most cap."""
    b = 1
    while b < n:
        b *= 2
    return min(b, max(cap, n))
