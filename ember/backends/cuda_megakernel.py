"""A program as one persistent kernel (docs/megakernel.md): the task graph of runtime/megakernel.py
and the source of codegen/cuda_megakernel.py wrapped as a Program with a single launch, so graphs,
dims in device memory, torch tensors in and out, save/load and the LLM runtime run it unchanged.

Two constant buffers travel with it: `mk_tasks` (the task table, int32) and `mk_sync` (the epoch,
the exit count and one counter per launch, uint32, zero at upload; the kernel keeps them
consistent across runs, so they are never reset)."""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from .. import dtypes as dt
from .. import symbolic as sm
from ..codegen.cuda_megakernel import (COUNTER_STRIDE, PREFETCH_MIN, SHARDS, SYNC_COUNTERS, NotTaskable, render,
                                      static_shared_bytes)
from ..runtime import megakernel as tg
from ..runtime.program import BufferSpec, Launch, Program

# measured defaults (Llama-1B decode at context 1024 on the H100, bench/results/gpu-session29-2026-11-27/):
# a 32 KB weight stream 1.460 -> 1.440 and 1.416 -> 1.396 ms (64 KB and more were slower: 1.52-1.74,
# L2 thrashed); waits without the fence after their acquire 1.463 -> 1.416 (150 fuzzed runs equal)
STREAM_WINDOW = 32 * 1024
PRELOAD_MAX = 40 * 1024  # the preload's buffer (static shared memory: 48 KB a block in all)
REGS_PER_THREAD = 64  # the register budget a worker is compiled for: workers per SM = 65536 / (64 * threads)


def smem_per_sm(target) -> int:
    """Bytes of shared memory one SM holds (the H100's 228 KB where the target does not say)."""
    return int(getattr(target, "smem_per_sm", 0) or 228 * 1024)


def workers_per_sm(threads: int, smem: int, target, static: int = 0) -> int:
    """How many workers fit on one SM: by threads (2048 per SM), registers (64 per thread) and
    shared memory (the largest task's dynamic shared memory, the static arrays, and 1 KB the
    driver reserves per block)."""
    k = min(2048 // threads, 65536 // (REGS_PER_THREAD * threads), 32)
    k = min(k, smem_per_sm(target) // (smem + static + 1024))
    return max(k, 1)


def _function_keys(source: str, launches: list) -> list:
    """One key per launch that is equal for launches of the same code (the kernel's text with its
    own name taken out, and its block size): launches the megakernel runs through one task function."""
    import hashlib
    import re

    from ..codegen.cuda import split_program
    _, kernels = split_program(source)
    text = [re.sub(rf"\b{re.escape(l.kernel)}\b", "K", kernels[l.kernel]) + str(l.config["block"]) for l in launches]
    return [hashlib.sha256(t.encode()).hexdigest() for t in text]


def _preloaded(source: str, launches: list, args: list, constants: set, sizes: dict) -> list:
    """Per launch, [(parameter position, slot of `args`, bytes)] of the weights its task function
    reads through the preload: large constants (PREFETCH_MIN) of a kernel without dynamic shared
    memory (the buffer is the worker's own, beside it), as codegen/cuda_megakernel.py `task_function`
    redirects them."""
    from ..codegen.cuda import split_program
    from ..codegen.cuda_megakernel import uses_dynamic_smem
    from ..codegen.cuda_megakernel_dispatch import PRELOAD_SLOTS
    _, kernels = split_program(source)
    out = []
    for l in launches:
        out.append([] if uses_dynamic_smem(kernels[l.kernel]) else
                   [(k, args.index(a), sizes[a]) for k, a in enumerate(l.args)
                    if a in constants and sizes.get(a, 0) >= PREFETCH_MIN and k < PRELOAD_SLOTS])
    return out


def megakernel_program(base: Program, target, workers: int | None = None, per_sm: int | None = None,
                       seed: int | None = None, jitter: int | None = None, trace: bool = False,
                       prefetch: int = 0, free_running: bool = True, stream: int = STREAM_WINDOW,
                       fence: bool = False, cyclic: bool = False, slices: int = 1, replicate: bool = False,
                       stream_blocks: int = 0, spin: int | None = None, sleep_ns: int | None = None,
                       sticky: bool = True, evict: bool = True, compact: bool = True, idle: int = 0,
                       idle_ns: int | None = None, preload: int = 0, relaxed_poll: bool = False,
                       inline_writes: bool = False) -> Program:
    """`base` (a program rendered with task_config schedules) as one persistent kernel for `target`.
    workers: the number of persistent blocks (default: SMs x workers per SM); seed: deal tasks to
    random workers instead of round-robin (the schedule fuzzer); jitter: compile random sleeps in
    (seeded); trace: record every task's start and end (docs/megakernel.md: the timeline);
    prefetch: bytes of its weights each task asks L2 for before it waits (0: none); free_running:
    a task's blocks without a barrier between them where its function needs none; stream: bytes of
    weights each worker keeps asked of L2 ahead of its position (the weight stream; 0: none); fence:
    a fence after each wait's acquire load (False: the acquire and the block barrier alone); cyclic:
    launches of more blocks than workers dealt cyclically (runtime/megakernel.py `build`); slices:
    the launches in that many consecutive parts, each one launch of the same persistent kernel with
    a task table and counters of its own, after the previous one (per-slice megakernels: a kernel
    boundary between slices instead of counters); replicate: a one-block producer read only by the
    next launch runs in each of that launch's tasks instead (runtime/megakernel.py `replicable`);
    stream_blocks: a task asks L2 for its weights that many blocks ahead of the one it runs; spin /
    sleep_ns: a wait's tight polls before it sleeps, and its sleep between polls (64 / 64: a worker
    idle for long sleeps, and may wake late); sticky: a launch of fewer tasks than workers runs on the
    workers the first launch of the same task function ran on (runtime/megakernel.py `build`'s
    homes: its code stays in those SMs' instruction caches); evict: the weight stream's requests come
    into L2 as evict-last and the tasks' 16-byte weight loads leave it evict-first (and skip L1)
    (measured ~2% faster at the 32 KB window; longer windows still lose); compact: the dispatcher calls
    through one case per task function (codegen/cuda_megakernel_dispatch.py); idle: bytes past the
    stream's window each task may ask L2 for, a piece at a time with idle_ns between pieces, while its
    worker waits (the idle stream: weights load while the worker would be idle); preload: bytes of
    each worker's shared memory that each GEMV-like task's first weights are copied into (bulk copies
    on an mbarrier) before its wait, read from there by the task (runtime/megakernel.py
    `preload_table`; needs evict and compact); relaxed_poll: a wait polls with relaxed loads and
    takes one acquire load once the count is there (instead of an acquire load per poll);
    inline_writes: a one-block state write (a KV cache's new row) runs at the start of each task of
    its first reader instead of as a task of its own (runtime/megakernel.py `inlinable_writes`)."""
    if preload and not (evict and compact):
        raise ValueError("megakernel option preload needs evict=True and compact=True")
    if preload and (int(preload) % 16 or not 0 < int(preload) <= PRELOAD_MAX):
        raise ValueError(f"megakernel option preload: {preload} bytes is not a multiple of 16 up to {PRELOAD_MAX} "
                         "(the buffer is static shared memory, 48 KB a block with the dispatcher's own)")
    if any(l.collective for l in base.launches):
        raise NotTaskable("a program with collectives (they run between kernels)")
    # a kernel's per-launch workspace (flash-decoding's partials and arrival counters, zero at upload,
    # left zero by the kernel: the last block of a group resets its counter) as a buffer of its own,
    # passed after the kernel's buffers as the kernel takes it
    workspaces = {f"mk_ws{i}": int(l.config["workspace"]) for i, l in enumerate(base.launches) if l.config.get("workspace")}
    launches = [dataclasses.replace(l, args=list(l.args) + [f"mk_ws{i}"],
                                    writes=None if l.writes is None else list(l.writes) + [f"mk_ws{i}"])
                if f"mk_ws{i}" in workspaces else l for i, l in enumerate(base.launches)]
    if not launches:
        raise NotTaskable("a program without kernels")
    threads = max(int(l.config["block"]) for l in launches)
    smem = max(int(l.config.get("smem", 0)) for l in launches)
    bounds = dict(base.dim_bounds)
    grids = [sm.from_json(l.config["grid"]) for l in launches]
    for l, g in zip(launches, grids):
        free = sorted(sm.free_vars(g) - set(bounds))
        if free:
            raise NotTaskable(f"kernel {l.kernel}: its grid depends on {free} without a bound (compile with dim_bounds=)")
    constants = {n for n, b in base.buffers.items() if b.kind == "data"}
    env = base.memory_env({d: bounds.get(d, 1) for d in base.dims})
    prologues, per_worker, deps_view = {}, {}, launches
    if replicate and inline_writes:
        raise ValueError("megakernel options replicate and inline_writes together: not supported yet")
    if replicate:
        launches, grids, deps_view, prologues, per_worker = _replicate(launches, grids, bounds, base, env)
    if inline_writes:
        launches, grids, deps_view, prologues, per_worker = _inline_writes(launches, grids, bounds, base)
    use_idle = bool(stream) and int(idle) > 0 and threads > 32  # (thread 32 runs the stream beside warp 0's waits)
    used = list(dict.fromkeys(a for l in launches + [q for ps in prologues.values() for q in ps] for a in l.args))
    use_preload = int(preload) > 0 and threads > 32
    args = used + (["mk_pl"] if use_preload else []) + (["mk_pf"] if stream else []) + ["mk_tasks", "mk_sync"]
    sizes = {n: int(sm.evaluate(b.size, env)) * b.dtype.itemsize for n, b in base.buffers.items()}
    sizes.update(workspaces)
    # the source depends on the launches' blocks and the table's row width, not on the number of
    # workers; the workers per SM follow from its static shared memory, then go into its launch bounds
    shape = tg.build(deps_view, grids, bounds, 1)
    src = render(base.source, launches, args, constants, list(base.dims), shape, threads, "@PER_SM@", shape.width,
                 sizes=sizes, prefetch_cap=int(prefetch), free_running=free_running, stream=bool(stream),
                 fence=bool(fence), prologues=prologues, per_worker=per_worker, stream_blocks=int(stream_blocks),
                 evict=bool(evict), compact=bool(compact), idle=use_idle, preload=int(preload) if use_preload else 0)
    k = per_sm or workers_per_sm(threads, smem, target, static_shared_bytes(src))
    src = src.replace("@PER_SM@", str(k))
    nworkers = workers or k * int(target.sm_count)
    ranges = tg.slice_ranges(len(launches), slices)
    if trace and len(ranges) > 1:
        raise ValueError("megakernel trace=True with slices: trace one slice (slices=1)")
    weights = [[(args.index(a), sizes[a]) for a in dict.fromkeys(l.args)
                if a in constants and sizes.get(a, 0) >= PREFETCH_MIN] for l in launches]
    counters = SYNC_COUNTERS + len(launches) * SHARDS * COUNTER_STRIDE
    trace_at = (counters + 1) // 2  # (in 64-bit words)
    graphs, tables, syncs, windows, preloads = [], [], [], [], []
    preloaded = _preloaded(base.source, launches, args, constants, sizes) if use_preload else []
    homes = _function_keys(base.source, launches) if sticky else None
    for a, b in ranges:  # (one slice: the whole program)
        graph = tg.build(deps_view[a:b], grids[a:b], bounds, nworkers, cyclic, None if homes is None else homes[a:b])
        graph.offset = a
        if seed is not None:
            tg.deal_randomly(graph, seed)
        tg.validate(graph)
        graphs.append(graph)
        tables.append(graph.table(shape.width))
        if stream:  # (the weights each launch reads, as the dispatcher names them: slots of `args`)
            windows.append(tg.stream_window(graph, weights[a:b], int(stream), int(idle) if use_idle else 0))
        if use_preload:
            preloads.append(tg.preload_table(graph, preloaded[a:b], int(preload)))
        ntasks = sum(len(t) for t in graph.tasks)
        syncs.append(np.zeros(counters + (4 * ntasks + 2 if trace else 0), np.int32))  # (uint32 on the device)
    graph = graphs[0]
    ntasks = sum(len(t) for g in graphs for t in g.tasks)
    defines = ""
    timeout = os.environ.get("EMBER_MK_TIMEOUT_S")  # the watchdog (5 s); longer under compute-sanitizer
    if timeout:
        defines += f"#define EM_MK_TIMEOUT_NS {int(float(timeout) * 1e9)}ull\n"
    if jitter is not None:
        defines += f"#define EM_MK_JITTER {int(jitter) & 0x7fffffff}u\n"
    if trace:
        defines += f"#define EM_MK_TRACE {trace_at}\n"
    if spin is not None:
        defines += f"#define EM_MK_SPIN {int(spin)}\n"
    if sleep_ns is not None:
        defines += f"#define EM_MK_SLEEP_NS {int(sleep_ns)}\n"
    if evict:
        defines += "#define EM_MK_EVICT 1\n"
    if relaxed_poll:
        defines += "#define EM_MK_RELAXED_POLL 1\n"
    if idle_ns is not None:
        defines += f"#define EM_MK_IDLE_NS {int(idle_ns)}\n"
    if os.environ.get("EMBER_MK_BAR0_WHEN_FULL"):  # (a racecheck probe: a task over every thread syncs on barrier 0)
        defines += "#define EM_MK_BAR0_WHEN_FULL 1\n"
    buffers = dict(base.buffers)
    data = dict(base.data)
    suffix = [""] if len(ranges) == 1 else [str(i) for i in range(len(ranges))]
    for sfx, table, sync in zip(suffix, tables, syncs):
        buffers["mk_tasks" + sfx] = BufferSpec("mk_tasks" + sfx, dt.int32, (int(table.size),), "data")
        buffers["mk_sync" + sfx] = BufferSpec("mk_sync" + sfx, dt.int32, (int(sync.size),), "data")
        data["mk_tasks" + sfx], data["mk_sync" + sfx] = table, sync
    for sfx, table in zip(suffix, preloads):
        buffers["mk_pl" + sfx] = BufferSpec("mk_pl" + sfx, dt.int32, (int(table.size),), "data")
        data["mk_pl" + sfx] = table
    for sfx, window in zip(suffix, windows):
        buffers["mk_pf" + sfx] = BufferSpec("mk_pf" + sfx, dt.int32, (int(window.size),), "data")
        data["mk_pf" + sfx] = window
    for name, nbytes in workspaces.items():
        buffers[name] = BufferSpec(name, dt.int32, ((nbytes + 3) // 4,), "data")
        data[name] = np.zeros((nbytes + 3) // 4, np.int32)
    for name, n in per_worker.items():  # (a replicated producer's output: a slice per worker)
        buffers[name] = BufferSpec(name, base.buffers[name[len("mk_rep_"):]].dtype, (nworkers * n,), "temp")
    # tasks over fewer threads than the worker sync on a partial barrier (racecheck flags those)
    uniform = all(int(l.config["block"]) == threads for l in launches)
    summary = {"workers": nworkers, "per_sm": k, "threads": threads, "uniform_threads": uniform, "smem": smem, "tasks": ntasks,
               "launches": len(launches), "max_waits": max(g.max_waits for g in graphs), "seed": seed, "jitter": jitter,
               "prefetch": int(prefetch), "stream": int(stream), "fence": bool(fence), "cyclic": bool(cyclic),
               "slices": len(ranges), "replicated": len(prologues), "stream_blocks": int(stream_blocks),
               "spin": spin, "sleep_ns": sleep_ns, "sticky": bool(sticky),
               "evict": bool(evict), "compact": bool(compact), "idle": int(idle), "idle_ns": idle_ns,
               "preload": int(preload) if use_preload else 0, "relaxed_poll": bool(relaxed_poll),
               "inlined_writes": sum(len(ps) for ps in prologues.values()) if inline_writes else 0,
               "trace_at": trace_at if trace else None,
               "kernels": [l.kernel for l in launches]}
    mks = []
    for sfx, (a, b) in zip(suffix, ranges):  # the same kernel, each slice with its own table and counters
        part = launches[a:b]
        sargs = used + (["mk_pl" + sfx] if use_preload else []) + (["mk_pf" + sfx] if stream else []) + \
            ["mk_tasks" + sfx, "mk_sync" + sfx]
        writes = list(dict.fromkeys(w for l in part for w in (l.args if l.writes is None else l.writes)))
        stats = {key: sm.to_json(sum((sm.from_json(l.stats[key]) for l in part if key in l.stats), sm.sym(0)))
                 for key in ("bytes", "flops")}
        mks.append(Launch("em_megakernel", sargs, list(base.dims), stats,
                          {"grid": nworkers, "block": threads, "smem": smem, "mode": "megakernel", "pdl": False,
                           "cooperative": True, "per_sm": k}, writes + ["mk_sync" + sfx]))
    meta = dict(base.meta)
    meta["megakernel"] = summary
    p = Program(base.device, defines + src, mks, buffers, base.outputs, base.inputs, base.dims, data,
                base.output_names, base.output_kind, meta, target)
    p.megakernel_graph = graph  # (the first slice's: the whole program's without slices)
    p.megakernel_graphs = graphs
    return p


def _replicate(launches: list, grids: list, bounds: dict, base: Program, env: dict):
    """The launches with each replicable producer (runtime/megakernel.py `replicable`) folded into
    its consumer: (launches, grids, the launches as the dependency analysis sees them — the consumer
    reading what its producer reads —, {consumer index: producer}, {per-worker buffer: elements})."""
    blocks = [int(sm.evaluate(g, bounds)) if sm.free_vars(g) else int(sm.evaluate(g, {})) for g in grids]
    temps = {n for n, b in base.buffers.items() if b.kind == "temp"}
    pairs = {p: (c, h) for p, c, h in tg.replicable(launches, blocks, temps)}
    out, out_grids, deps, prologues, per_worker = [], [], [], {}, {}
    for i, l in enumerate(launches):
        if i in pairs:
            continue
        pair = next(((p, h) for p, (c, h) in pairs.items() if c == i), None)
        out_grids.append(grids[i])
        if pair is None:
            out.append(l)
            deps.append(l)
            continue
        p, h = pair
        rep = "mk_rep_" + h  # (the producer's output, a slice per worker)
        per_worker[rep] = int(sm.evaluate(base.buffers[h].size, env))
        swap = [rep if a == h else a for a in l.args]
        prologues[len(out)] = [dataclasses.replace(launches[p], args=[rep if a == h else a for a in launches[p].args],
                                                   writes=[rep])]
        c = dataclasses.replace(l, args=swap, writes=[rep if w == h else w for w in l.writes])
        out.append(c)
        deps.append(dataclasses.replace(c, args=swap + [a for a in launches[p].args if a != h]))
    return out, out_grids, deps, prologues, per_worker


def _inline_writes(launches: list, grids: list, bounds: dict, base: Program):
    """The launches with each inlinable state write (runtime/megakernel.py `inlinable_writes`: a KV
    cache's new row) run at the start of each task of its first reader: (launches, grids, the
    launches as the dependency analysis sees them — the reader also reading the writer's inputs and
    writing its outputs —, {reader index: [writers]}, {})."""
    blocks = [int(sm.evaluate(g, bounds)) if sm.free_vars(g) else int(sm.evaluate(g, {})) for g in grids]
    fixed = [not sm.free_vars(g) for g in grids]
    states = {n for n, b in base.buffers.items() if b.kind == "input"}
    pairs = tg.inlinable_writes(launches, blocks, states, fixed)
    producers = {p for p, _ in pairs}
    out, out_grids, deps, prologues = [], [], [], {}
    for i, l in enumerate(launches):
        if i in producers:
            continue
        ps = [launches[p] for p, c in pairs if c == i]
        out_grids.append(grids[i])
        if not ps:
            out.append(l)
            deps.append(l)
            continue
        written = [w for q in ps for w in q.writes]
        c = l if l.writes is None else dataclasses.replace(l, writes=list(dict.fromkeys(list(l.writes) + written)))
        prologues[len(out)] = ps
        out.append(c)
        deps.append(dataclasses.replace(c, args=list(dict.fromkeys(list(l.args) + [a for q in ps for a in q.args]))))
    return out, out_grids, deps, prologues, {}


def read_trace(program) -> list:
    """[(worker, launch, kernel, first block, end block, start ns, end ns)] of the last run of a
    program built with trace=True (each task's `%globaltimer` stamps, read back from the device)."""
    from cuda.bindings import driver

    from .cuda_device import _check
    at = program.meta["megakernel"].get("trace_at")
    if at is None:
        raise ValueError("this megakernel was built without trace=True")
    ex = program.executor
    ex.dev.sync()
    buf = ex._data["mk_sync"]
    host = np.empty(program.data["mk_sync"].size, np.int32)
    _check(driver.cuMemcpyDtoH(host.ctypes.data, int(buf.handle), host.nbytes), "trace read-back")
    stamps = host.view(np.uint64)[at:]
    graph = program.megakernel_graph
    kernels = program.meta["megakernel"]["kernels"]
    out, t = [], 0
    for w, lst in enumerate(graph.workers):
        for li, ti in lst:
            task = graph.tasks[li][ti]
            out.append((w, li, kernels[li], task.first, task.end, int(stamps[2 * t]), int(stamps[2 * t + 1])))
            t += 1
    return out


def chrome_trace(rows: list) -> dict:
    """The per-task timeline as Chrome-trace / Perfetto JSON: one track per worker."""
    t0 = min(r[5] for r in rows) if rows else 0
    ev = [{"name": f"{k} [{a},{b})", "cat": k.split("_", 1)[-1], "ph": "X", "pid": 0, "tid": w,
           "ts": (s - t0) / 1e3, "dur": max(e - s, 0) / 1e3, "args": {"launch": li}} for w, li, k, a, b, s, e in rows]
    return {"traceEvents": ev, "displayTimeUnit": "ns"}


def launch_spans(rows: list) -> list:
    """Per launch (in program order): (kernel, first task start, last task end) in us from the run's
    first start: where the step's time goes, and the gaps between dependent launches."""
    if not rows:
        return []
    t0 = min(r[5] for r in rows)
    by: dict = {}
    for w, li, k, a, b, s, e in rows:
        lo, hi, _ = by.get(li, (s, e, k))
        by[li] = (min(lo, s), max(hi, e), k)
    return [(by[li][2], (by[li][0] - t0) / 1e3, (by[li][1] - t0) / 1e3) for li in sorted(by)]
