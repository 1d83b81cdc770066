"""The megakernel's task graph: a program's launches cut into tasks, their dependencies as counters,
and a static list of tasks per persistent block (docs/megakernel.md).

A program is a list of launches in an order that is already a valid schedule. In the megakernel
every launch becomes a few *tasks*, each a contiguous range of the launch's blocks, and every
persistent block (a *worker*) runs its own list of tasks in program order. A task of launch j
waits until every task of each launch it depends on has finished; a launch depends on an earlier
one when they touch the same buffer and at least one of them writes it (read-after-write,
write-after-read, write-after-write). In the megakernel program every temporary has memory of its
own (one launch keeps them all live), so buffers are compared by name.

Counters are per launch, split over SHARDS words so that a launch's hundreds of tasks do not all
add to one address, and never reset: shard j of launch i grows by the number of its tasks with
index = j (mod SHARDS) every run, so a wait of run `epoch` (0, 1, ...) is for that number times
`epoch + 1` on every shard; the epoch lives in device memory and the last worker to finish a run
advances it.

No deadlock by construction: every wait points to a launch earlier in program order, and every
worker's list is in program order, so by induction on the launch index every task can run once
all workers are resident (checked at load from the occupancy the kernel gets). `simulate` runs the
same lists in a random interleaving of the workers as a serial reference and checks it.
"""
from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field

import numpy as np

from .. import symbolic as sm

from ..codegen.cuda_megakernel import SHARDS, STRIDE_HEAD  # noqa: F401 (the table layout the dispatcher reads)


@dataclass
class Task:
    launch: int  # index into the program's kernel launches
    first: int  # blocks [first, end) of that launch, every `step`-th
    end: int
    step: int = 1


@dataclass
class TaskGraph:
    blocks: list  # per launch: its blocks at the dims' bounds (the tasks cover these)
    tasks: list  # per launch: its Tasks
    deps: list  # per launch: the launches it waits for (after transitive reduction)
    workers: list = field(default_factory=list)  # per worker: [(launch, task index)] in order
    offset: int = 0  # a slice's first launch in the program (the table names launches by program index)

    @property
    def max_waits(self) -> int:
        return max((len(d) for d in self.deps), default=0)

    def table(self, width: int | None = None) -> np.ndarray:
        """The task lists as one int32 array: worker w's tasks are rows [starts[w], starts[w+1]),
        starts first (len(workers) + 1 entries), then one row per task: launch, first block, end
        block, number of waits, the task's index in its launch (its counter shard is that modulo
        SHARDS), its block step, and per wait (launch, tasks of that launch per run); launches by
        their index in the program (`offset` added: a slice's graph counts from its first)."""
        width = width or self.width  # (a slice's rows as wide as the whole program's: one dispatcher)
        starts, rows = [0], []
        for lst in self.workers:
            for li, ti in lst:
                t = self.tasks[li][ti]
                row = [li + self.offset, t.first, t.end, len(self.deps[li]), ti, t.step]
                for d in self.deps[li]:
                    row += [d + self.offset, len(self.tasks[d])]
                rows.append(row + [0] * (width - len(row)))
            starts.append(len(rows))
        head = np.asarray(starts, np.int32)
        body = np.asarray(rows, np.int32).reshape(-1, width) if rows else np.zeros((0, width), np.int32)
        return np.concatenate([head, body.ravel()])

    @property
    def width(self) -> int:
        return STRIDE_HEAD + 2 * max(self.max_waits, 1)


def accesses(launches: list) -> list:
    """(reads, writes) buffer-name sets per launch (unknown writes: every argument)."""
    out = []
    for l in launches:
        w = set(l.args if l.writes is None else l.writes)
        out.append((set(l.args) - w, w))
    return out


def dependencies(launches: list) -> list:
    """Per launch, the earlier launches it must wait for: a conflicting access (one of the two
    writes a buffer the other touches), minus those implied through another dependency."""
    acc = accesses(launches)
    direct = []
    for j, (rj, wj) in enumerate(acc):
        direct.append({i for i in range(j) if (acc[i][1] & (rj | wj)) or (acc[i][0] & wj)})
    reach: list = []  # reach[j]: every launch j transitively waits for
    reduced = []
    for j, d in enumerate(direct):
        implied = set().union(*(reach[i] for i in d)) if d else set()
        reduced.append(sorted(d - implied))
        reach.append(d | implied)
    return reduced


def replicable(launches: list, blocks: list, temps: set) -> list:
    """[(producer, consumer, buffer)]: a one-block launch whose only output is a temporary that only
    the next launch (of several blocks and the same block size) reads — an RMSNorm before the GEMV
    that reads it. The megakernel's option `replicate` runs such a producer at the start of each of
    its consumer's tasks, into the worker's own slice of the buffer: one hand-off fewer, the
    producer's work done by every worker at once instead of by one while the others wait."""
    out: list = []
    for p in range(len(launches) - 1):
        lp, lc = launches[p], launches[p + 1]
        outs = list(lp.args if lp.writes is None else lp.writes)
        if blocks[p] != 1 or blocks[p + 1] < 2 or len(outs) != 1 or (out and out[-1][1] == p):
            continue
        h = outs[0]
        if h not in temps or h not in lc.args or (lc.writes is None or h in lc.writes) \
                or int(lp.config["block"]) != int(lc.config["block"]) or lp.config.get("workspace") \
                or any(h in l.args for j, l in enumerate(launches) if j not in (p, p + 1)):
            continue
        out.append((p, p + 1, h))
    return out


def inlinable_writes(launches: list, blocks: list, states: set, fixed: list) -> list:
    """[(producer, consumer)]: a one-block launch that writes only state buffers in place (a KV
    cache's new row) and whose first reader is a later launch of several blocks, the same block
    size and a fixed grid (`fixed`), no launch between them writing what the producer reads. The
    megakernel's option `inline_writes` runs such a producer at the start of each of its consumer's
    tasks: every task writes the same bytes, and reads them after its own write, so the consumer
    waits for the producer's inputs only — two hand-offs fewer (docs/megakernel.md)."""
    out: list = []
    for p, lp in enumerate(launches):
        w = set(lp.writes or ())
        if blocks[p] != 1 or not w or not w <= states or lp.config.get("workspace"):
            continue
        c = next((j for j in range(p + 1, len(launches)) if w & set(launches[j].args)), None)
        if c is None or blocks[c] < 2 or not fixed[c] or int(lp.config["block"]) != int(launches[c].config["block"]):
            continue
        reads = set(lp.args) - w
        if any(set(launches[j].args if launches[j].writes is None else launches[j].writes) & reads for j in range(p + 1, c)):
            continue
        out.append((p, c))
    return out


def slice_ranges(n: int, slices: int) -> list:
    """[first, end) launch ranges of `slices` consecutive, about equal parts of n launches: per-slice
    megakernels, each its own persistent launch after the previous one (docs/megakernel.md)."""
    slices = max(1, min(int(slices), n))
    return [(n * i // slices, n * (i + 1) // slices) for i in range(slices)]


def split_blocks(blocks: int, parts: int) -> list:
    """[first, end) ranges of about equal size covering range(blocks) in at most `parts` pieces."""
    parts = max(1, min(parts, blocks))
    return [(blocks * p // parts, blocks * (p + 1) // parts) for p in range(parts)]


def build(launches: list, grids: list, bounds: dict, workers: int, cyclic: bool = False, homes: list | None = None) -> TaskGraph:
    """The task graph of `launches` (kernel launches only) with grid expressions `grids`, sized at
    the dims' `bounds`, over `workers` persistent blocks. A launch of G blocks becomes min(G,
    workers) tasks of about G / workers consecutive blocks (a worker runs them one after another);
    tasks are dealt round-robin from where the previous launch stopped, so one-block launches
    spread over the workers. A grid that a dim makes smaller at run time skips the missing blocks
    (its tasks still count, so every wait is for the same number of tasks). `cyclic`: a launch of
    more blocks than workers deals them cyclically instead (task p of n: blocks p, p + n, ...), so
    the workers sweep a weight matrix together as a kernel's blocks do. `homes` (one key per launch,
    e.g. its task function): a launch of fewer tasks than workers goes to the workers its key's
    first launch went to (the rest are dealt as without it), so a small task function runs on the
    same SMs every layer, its code warm in their instruction caches, instead of on the next ones."""
    blocks = []
    for g in grids:
        n = int(sm.evaluate(g, bounds)) if sm.free_vars(g) else int(sm.evaluate(g, {}))
        blocks.append(max(n, 0))
    tasks = [[Task(i, p, n, workers) for p in range(workers)] if cyclic and n > workers else
             [Task(i, a, b) for a, b in split_blocks(max(n, 1), workers)] for i, n in enumerate(blocks)]
    g = TaskGraph(blocks, tasks, dependencies(launches), [[] for _ in range(workers)])
    w = 0
    home: dict = {}
    for i, ts in enumerate(tasks):
        start = home.setdefault(homes[i], w) if homes is not None and len(ts) < workers else w
        for t in range(len(ts)):
            g.workers[(start + t) % workers].append((i, t))
        w = (w + len(ts)) % workers
    return g


def validate(g: TaskGraph) -> None:
    """The static checks: every wait is for an earlier launch, with the full task count; every
    worker's list is in program order; every task appears exactly once; tasks cover the blocks."""
    seen = set()
    for lst in g.workers:
        last = -1
        for li, ti in lst:
            if li < last:
                raise AssertionError(f"worker list out of program order at launch {li}")
            last = li
            if (li, ti) in seen:
                raise AssertionError(f"task {ti} of launch {li} scheduled twice")
            seen.add((li, ti))
    for li, ts in enumerate(g.tasks):
        for ti in range(len(ts)):
            if (li, ti) not in seen:
                raise AssertionError(f"task {ti} of launch {li} never scheduled")
        covered = sorted(b for t in ts for b in range(t.first, t.end, t.step))
        if covered != list(range(max(g.blocks[li], 1))):
            raise AssertionError(f"tasks of launch {li} do not tile its {g.blocks[li]} blocks")
        for d in g.deps[li]:
            if d >= li:
                raise AssertionError(f"launch {li} waits for a later launch {d}")


def simulate(g: TaskGraph, seed: int = 0, runs: int = 2) -> list:
    """Serial reference of the megakernel: the workers' lists run in a random interleaving (one
    step of a random worker at a time) with the counters the device uses, for `runs` runs with
    monotonic counters. Returns the order tasks ran in, [(run, launch, task)]; raises on a deadlock
    (no worker can step) or on a task that starts before a launch it depends on has finished."""
    rng = random.Random(seed)
    counters = [0] * len(g.tasks)
    order = []
    for run in range(runs):
        pos = [0] * len(g.workers)
        finished = [0] * len(g.tasks)  # tasks of each launch finished in this run
        while True:
            ready = []
            for w, lst in enumerate(g.workers):
                if pos[w] < len(lst):
                    li, _ = lst[pos[w]]
                    if all(counters[d] >= len(g.tasks[d]) * (run + 1) for d in g.deps[li]):
                        ready.append(w)
            if not ready:
                if any(pos[w] < len(lst) for w, lst in enumerate(g.workers)):
                    stuck = [(w, lst[pos[w]]) for w, lst in enumerate(g.workers) if pos[w] < len(lst)]
                    raise AssertionError(f"deadlock in run {run}: workers waiting at {stuck[:4]}")
                break
            w = rng.choice(ready)
            li, ti = g.workers[w][pos[w]]
            for d in g.deps[li]:
                if finished[d] != len(g.tasks[d]):
                    raise AssertionError(f"launch {li} started before launch {d} finished")
            order.append((run, li, ti))
            counters[li] += 1
            finished[li] += 1
            pos[w] += 1
    return order


def start_order(order: list, run: int = 0) -> list:
    """The launches in the order their first task started in one run of `simulate`'s result: a
    valid program order (a launch starts only after every launch it depends on has finished)."""
    first: dict = {}
    for k, (r, li, _) in enumerate(order):
        if r == run:
            first.setdefault(li, k)
    return sorted(first, key=first.get)


def deal_randomly(g: TaskGraph, seed: int) -> None:
    """Each task to a random worker, the lists staying in program order: another valid static
    schedule (the schedule fuzzer's)."""
    rng = random.Random(seed)
    n = len(g.workers)
    g.workers = [[] for _ in range(n)]
    for i, ts in enumerate(g.tasks):
        for t in range(len(ts)):
            g.workers[rng.randrange(n)].append((i, t))


STREAM_CHUNK = 1 << 18  # one L2 prefetch instruction covers at most this many bytes
IDLE_CHUNK = 8 * 1024  # the idle stream's pieces: asked for one at a time while a worker waits


def _slices_of(stream: list, ends: list, a: int, e: int, chunk: int) -> list:
    """(slot, first 16-byte unit, end 16-byte unit) pieces of at most `chunk` bytes covering stream
    bytes [a, e) (`stream`: (offset, slot, lo, hi) slices in order; `ends`: each slice's end offset)."""
    out = []
    for j in range(bisect.bisect_right(ends, a), len(stream)):
        off, slot, lo, hi = stream[j]
        if off >= e:
            break
        s, f = max(lo, lo + (a - off)), min(hi, lo + (e - off))
        for c in range(s, f, chunk):
            out.append((slot, c >> 4, min(f, c + chunk) >> 4))
    return out


def stream_window(g: TaskGraph, weights: list, window: int, idle: int = 0) -> np.ndarray:
    """Per task (in table order), the L2 prefetches that keep each worker's next `window` bytes of
    weights requested ahead of it: the weight stream (docs/megakernel.md, twenty-ninth session).

    `weights`: per launch, [(slot, bytes)] of the large constants it reads, each read in block order
    (a GEMV's rows: a task of blocks [first, end) of G reads bytes [bytes * first / G, bytes * end /
    G)). A worker's stream is the concatenation of its tasks' slices; before task t waits, it asks
    L2 for the part of [start of t, start of t + window) not asked for yet, so weights load while
    the worker waits at a hand-off or runs a task that reads none.

    `idle` > 0: per task also the next `idle` bytes past the window (not asked for by an earlier
    task's), in IDLE_CHUNK pieces, which the worker asks for one by one only while it waits (the
    megakernel's option `idle`: weights load while the worker would otherwise be idle, and not
    while it streams).

    Returned as one int32 array: [segments' offset, then per task the index of its first segment
    (ntasks + 1 entries; with `idle`, 2 ntasks + 1: a task's window, then its idle pieces)], then
    per segment (slot, first 16-byte unit, end 16-byte unit)."""
    starts, segs = [0], []
    for lst in g.workers:
        stream = []  # (stream offset, slot, lo, hi) of every slice, in the worker's order
        at_task = []
        pos = 0
        for li, ti in lst:
            at_task.append(pos)
            t, blocks = g.tasks[li][ti], max(g.blocks[li], 1)
            for slot, nbytes in (weights[li] if t.step == 1 else ()):  # (a cyclic task's rows are strided)
                lo, hi = (nbytes * t.first // blocks) & ~15, (nbytes * t.end // blocks) & ~15
                if hi > lo:
                    stream.append((pos, slot, lo, hi))
                    pos += hi - lo
        ends = [off + hi - lo for off, _, lo, hi in stream]
        asked, asked_idle = 0, 0  # stream bytes asked for so far (by the windows, by the idle pieces)
        for start in at_task:
            e = min(start + window, pos)
            segs += _slices_of(stream, ends, max(asked, start), e, STREAM_CHUNK)
            asked = max(asked, e)
            starts.append(len(segs))
            if idle > 0:
                e = min(start + window + idle, pos)
                segs += _slices_of(stream, ends, max(asked_idle, start + window), e, IDLE_CHUNK)
                asked_idle = max(asked_idle, e)
                starts.append(len(segs))
    out = np.asarray([1 + len(starts)] + starts, np.int64)
    if segs and max(max(s[1], s[2]) for s in segs) >= 2 ** 31:
        raise ValueError("a weight over 32 GB cannot be streamed")
    body = np.asarray(segs, np.int64).reshape(-1, 3).ravel()
    return np.concatenate([out, body]).astype(np.int32)


def preload_table(g: TaskGraph, weights: list, budget: int) -> np.ndarray:
    """Per task (in table order), the first bytes of its weights a worker copies into `budget` bytes
    of its shared memory before the task's wait (the megakernel's option `preload`). `weights`: per
    launch, [(parameter position, buffer slot, bytes)] of the large weights its task function reads
    through the preload (a GEMV's matrices; [] for the others), each read in block order as in
    `stream_window`; the budget is split evenly between a task's weights (16-byte units). Returned
    as one int32 array: [entries' offset, then per task the index of its first entry (ntasks + 1
    entries)], then per entry (parameter position, slot, first 16-byte unit, units)."""
    starts, entries = [0], []
    for lst in g.workers:
        for li, ti in lst:
            t, blocks, ws = g.tasks[li][ti], max(g.blocks[li], 1), weights[li]
            if ws and t.step == 1 and budget >= 16 * len(ws):
                share = (budget // len(ws)) & ~15
                for k, slot, nbytes in ws:
                    lo, hi = (nbytes * t.first // blocks) & ~15, (nbytes * t.end // blocks) & ~15
                    n = min(hi - lo, share)
                    if n > 0:
                        entries.append((k, slot, lo >> 4, n >> 4))
            starts.append(len(entries))
    if entries and max(e[2] for e in entries) >= 2 ** 31:
        raise ValueError("a weight over 32 GB cannot be preloaded")
    head = np.asarray([1 + len(starts)] + starts, np.int64)
    return np.concatenate([head, np.asarray(entries, np.int64).reshape(-1, 4).ravel()]).astype(np.int32)
