"""Continuous batching: sequences join and leave a running decode batch between steps.

The batch is `size` cache rows sharing one slot counter P (the decode program writes every row's
next token at slot P). A sequence joins a free row j when its prompt fits before P: a batch-1
prefill over cache row j alone (a contiguous view of the cache) writes the prompt at slots
[P - L, P) with `start[j] = P - L`, so its keys are its own (the mask hides the row's older slots)
and its rotary positions are 0..L-1, as if it ran alone. It decodes with the batch from then on,
and leaves when it meets a stop id, its token budget or a cancel; a free row decodes a dummy token
that attends only to itself. When every row is free the counter starts again at 0. A sequence whose
prompt is longer than P, or whose budget would pass the cache's end, waits until it fits.

A step is `launch` (queue the decode program) then `collect` (read its tokens back). While every
row is greedy and nobody joins, the next step can be launched before the current one is collected,
its input tokens being the current step's `next` output where it lies (on the GPU: copied device to
device), so the GPU runs a step while the host delivers the previous one's tokens (as
`llm/ahead.py` does for `generate`). A row that finishes at step n was also given step n + 1: that
token is dropped (its cache slot lies past the row's end and is never read)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Pending:
    """A launched decode step: the rows it computed (None: a free row's dummy) and its outputs."""
    rows: list
    out: dict
    tokens: object  # waits for the step's `next` tokens on the host (LLM.fetch_next)


@dataclass
class Row:
    key: object  # the caller's handle for the sequence
    params: object  # Sampling
    rng: np.random.Generator
    start: int
    last: int  # the token it feeds next
    count: int = 0  # tokens generated
    cancelled: bool = False


class ContinuousBatch:
    def __init__(self, llm, size: int):
        if size > llm.max_batch:
            raise ValueError(f"a batch of {size} rows needs max_batch >= {size} (it is {llm.max_batch})")
        self.llm, self.size = llm, size
        self.rows: list = [None] * size
        self.P = 0

    @property
    def active(self) -> int:
        return sum(r is not None for r in self.rows)

    def fits(self, prompt_len: int, max_new: int) -> bool:
        """Whether a sequence could join now."""
        if None not in self.rows:
            return False
        P = self.P if self.active else prompt_len
        return prompt_len <= P and P + max_new <= self.llm.max_seq_len

    def join(self, key, prompt: np.ndarray, params) -> int:
        """Prefill `prompt` into a free row; returns its first token (also counted)."""
        L = len(prompt)
        if not self.fits(L, params.max_new_tokens):
            raise ValueError("the sequence does not fit the running batch now")
        if not self.active:
            self.P = L
        j = self.rows.index(None)
        start = self.P - L
        out = self.llm._step("prefill", prompt[None, :], np.arange(L)[None, :], np.array([start]), start, row=j)
        row = Row(key, params, np.random.default_rng(params.seed), start, 0)
        row.last = self._choose(out, [row])[0]
        row.count = 1
        self.rows[j] = row
        return row.last

    def _choose(self, out, rows) -> list:
        return [int(t) for t in self.llm.choose(out, [r and r.params for r in rows], [r and r.rng for r in rows])]

    def finished(self, j: int) -> bool:
        r = self.rows[j]
        return r.cancelled or r.last in r.params.stop or r.count >= r.params.max_new_tokens

    def leave(self, j: int) -> None:
        self.rows[j] = None
        if not self.active:
            self.P = 0

    def decode_rows(self) -> int:
        """Rows a step computes: the active rows' span (joins take the lowest free row) rounded up
        to a power of two, so few rows cost few rows and only log2(size) + 1 decode programs exist."""
        hi = max((j + 1 for j, r in enumerate(self.rows) if r is not None), default=1)
        n = 1
        while n < hi:
            n *= 2
        return min(n, self.size)

    def buckets(self) -> list:
        """Every row count `decode_rows` can return (the decode programs to compile up front)."""
        out, n = [], 1
        while n < self.size:
            out.append(n)
            n *= 2
        return out + [self.size]

    def step(self) -> list:
        """One decode step for every active row: [(row index, key, token)]."""
        return self.collect(self.launch())

    def greedy(self) -> bool:
        return all(r is None or r.params.temperature == 0 for r in self.rows)

    def launch(self, after: Pending | None = None) -> Pending | None:
        """Queue the next decode step. With `after` (a launched, not yet collected step of the same
        rows, all greedy), its input tokens are `after`'s `next` output as it lies (no host copy);
        None when the rows changed since `after` (the caller collects first)."""
        rows = self.rows[:self.decode_rows()]
        P = self.P
        start = np.array([P if r is None else r.start for r in rows], np.int64)
        positions = (P - start)[:, None]
        if after is None:
            tokens = np.array([[0 if r is None else r.last] for r in rows], np.int64)
        else:
            same = all(r is None or (j < len(after.rows) and after.rows[j] is r) for j, r in enumerate(rows))
            if not same or len(rows) > len(after.rows) or not self.greedy():
                return None
            tokens = after.out["next"][:len(rows)]  # (free rows get whatever `after` made: a dummy)
        out = self.llm._step("decode", tokens, positions, start, P)
        self.P += 1
        return Pending(list(rows), out, self.llm.fetch_next(out))

    def collect(self, p: Pending) -> list:
        """The launched step's tokens for the rows still running it: [(row index, key, token)]."""
        live = [r if r is not None and self.rows[j] is r else None for j, r in enumerate(p.rows)]
        if all(r is None or r.params.temperature == 0 for r in live):
            new = [int(t) for t in p.tokens()]  # (greedy: the copy queued behind the step)
        else:  # sampling reads the logits: only ever collected right after its launch
            new = self._choose(p.out, live)
        got = []
        for j, r in enumerate(p.rows):
            if r is not None and self.rows[j] is r and not self.finished(j):
                r.last, r.count = new[j], r.count + 1
                got.append((j, r.key, new[j]))
        return got
