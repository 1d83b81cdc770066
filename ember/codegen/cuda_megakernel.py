"""The megakernel's CUDA source: a program's own kernels turned into task functions, and one
persistent kernel that runs every worker's task list (docs/megakernel.md).

A kernel Ember rendered becomes a `__device__` function of its virtual block: `blockIdx.x` and
`gridDim.x` become parameters (the block it runs and the launch's grid at this binding),
`__syncthreads()` a named barrier over the kernel's own threads (a task runs on the first
`block` threads of a worker; the others wait at the worker's barrier), the program-order wait
(`EM_GRID_DEPENDENCY`) disappears, and `em_dims_[i]` indexes the megakernel's dims. Activation
pointers lose `__restrict__`: data another worker wrote in this same launch must not be read
through the non-coherent path; weights (constants) keep it.

The persistent kernel: per task, warp 0 waits for each dependency's counter shards (acquire
loads; a `__threadfence` after them only with fence=True, the pattern of cooperative groups' grid
sync), the worker's barrier, the task's blocks one after another, the barrier, and thread 0 bumps
the launch's counter with a release.
A wait longer than the timeout prints which worker waited for what and traps: a hang becomes an
error. Compiled with `EM_MK_JITTER`, random sleeps before each signal and after each wait widen
race windows for the schedule fuzzer; with `EM_MK_TRACE`, every task's start and end
(`%globaltimer`) land in a trace buffer for the timeline.

Kernels this cannot take (thread-block clusters, tensor maps, wgmma's register reallocation, 2-D
indices) raise `NotTaskable` naming the construct; the caller renders those kernels without
clusters first (`task_config`).
"""
from __future__ import annotations

import re

from .. import symbolic as sm
from .cuda import split_program
from .cuda_megakernel_dispatch import (PRELOAD_SLOTS, COUNTER_STRIDE, SHARDS, STRIDE_HEAD, SYNC_COUNTERS, SYNC_EPOCH, SYNC_EXIT,  # noqa: F401
                                      DISPATCH_HEAD, TIMEOUT_NS, dispatcher, preload_helpers)

PREFETCH_MIN = 256 * 1024  # constants smaller than this are not prefetched (they stay in L2 anyway)

_FORBIDDEN = [
    (r"__cluster_dims__|em_cluster_|barrier\.cluster|%cluster", "thread-block clusters"),
    (r"__grid_constant__|CUtensorMap|cp\.async\.bulk\.tensor", "TMA tensor maps"),
    (r"setmaxnreg", "register reallocation (setmaxnreg)"),
    (r"\b(blockIdx|gridDim|threadIdx|blockDim)\.[yz]\b", "2-D or 3-D block indices"),
    (r"%ctaid|%nctaid", "block indices read in assembly"),
    (r"em_prefetch_l2\(", "the PDL L2 prefetch"),
    (r"griddepcontrol", "programmatic dependent launch in the body"),
]

_HEADER = re.compile(r'extern "C" __global__ void ((?:__\w+__\([^)]*\) )*)(\w+)\((.*?)\) \{', re.S)


# Static shared arrays every row kernel declares alike: one copy at file scope serves every task (they
# run one at a time on a worker). Declared inside each task function instead, every function would
# keep its own copy for the whole kernel (150 functions: ~19 KB of a worker's shared memory).
_DYN_SMEM_DECL = re.compile(r"extern __shared__ __align__\(\d+\) unsigned char em_dyn_smem\[\];")
_SHARED_DECL = re.compile(r"^[ \t]*__shared__ [^;]*;", re.M)
HOISTED = tuple(f"__shared__ {t} em_red_{t.replace(' ', '_')}[32];"
                for t in ("float", "double", "int", "long long", "unsigned", "unsigned long long", "unsigned short"))


def static_shared_bytes(source: str) -> int:
    """Bytes of the static `__shared__` arrays a source declares (a worker's fixed share)."""
    sizes = {"float": 4, "double": 8, "int": 4, "long long": 8, "unsigned": 4, "unsigned long long": 8,
             "unsigned short": 2, "unsigned char": 1, "char": 1, "short": 2}
    total = 0
    for m in re.finditer(r"__shared__ (?:__align__\(\d+\) )?([a-z ]+?) \w+((?:\[[^\]]+\])*);", source):
        n = sizes.get(m.group(1).strip(), 8)
        for d in re.findall(r"\[([^\]]+)\]", m.group(2)):
            # (our codegen writes sizes as integer sums such as "64 + 4"; anything else counts as 1024)
            n *= sum(int(x) for x in d.split("+")) if re.fullmatch(r"[\d\s+]+", d) else 1024
        total += n
    return total


def uses_dynamic_smem(chunk: str) -> bool:
    """Whether a rendered kernel (its source chunk) uses its dynamic shared memory beyond declaring
    it: `task_function` redirects the weight loads of a kernel that does not to the preload."""
    m = _HEADER.search(chunk)
    return "em_dyn_smem" in _DYN_SMEM_DECL.sub("", chunk[m.end():] if m else chunk)


class NotTaskable(ValueError):
    """A kernel the megakernel cannot run as a task (the message names the construct)."""


# a task's threads at most, so several workers share an SM (docs/megakernel.md). 128: every task of a
# Llama decode step then has the worker's own thread count, so no task barrier is over part of the
# worker; with 256 (attention and some GEMVs at 128) compute-sanitizer's racecheck reported hazards
# across the task barrier that uniform 128-thread tasks do not have (bench/results/gpu-session17-
# 2026-11-26/), at 2-11% of the megakernel's speed (2.42 / 2.59 against 2.18 / 2.54 ms at context
# 128 / 1024 on the H100, megakernel-h100-2026-11-26g.json)
TASK_THREADS = 128
TASK_SMEM = 68 * 1024  # a one-row kernel's shared-memory row cache above this is dropped (its rows re-read from L2)


def task_config(k, cfg: dict, target=None, max_threads: int = TASK_THREADS, max_smem: int | None = None,
                warp_min_grid: int = 0, decode_splits: int = 0, decode_stages: int = 0) -> dict:
    """Kernel k's schedule `cfg` as a task's. A worker is as large as its largest task (threads,
    shared memory), and only small workers let several share an SM and keep enough loads in
    flight: one 512-thread worker per SM streamed a GEMV at a quarter of the kernel's rate
    (bench/results/megakernel-h100-2026-11-26a.json). So: no thread-block clusters (a task runs on
    one worker: flash-decoding's cluster becomes as many splits, combined through a workspace), at
    most `max_threads` threads, flash-decoding with 4 warps and 16-key tiles (a
    half the shared memory of 8), a one-row kernel without a shared-memory row cache larger than
    TASK_SMEM (its rows re-read from L2), and a GEMV of one row per block as 8 rows per block (a warp a
    row: 8x the loads in flight per worker). Each change is kept only where the renderer accepts it.
    Measured (bench/results/megakernel-h100-2026-11-26*.json): a row cache dropped costs ~5 us a
    norm (it re-reads the residual stream twice), 16-key tiles ~10 us an attention; both only where
    the shared memory would keep workers off the SM. `max_smem` (a worker count per SM asked for:
    the megakernel's option `per_sm`): a task over it gets the smaller schedule that fits — a
    flash-decoding ring of fewer keys or warps, a one-row kernel without its row cache.
    `warp_min_grid`: a GEMV goes to warp mode only where that leaves at least this many blocks (a
    launch of 512 blocks over 396 workers runs two blocks on some: the slowest sets its span).
    `decode_splits`: flash-decoding's keys over this many tasks a head group (0: its cluster's
    blocks, at most 16); `decode_stages`: its ring's slots (0: two)."""
    from .cuda import render_kernel
    cfg = dict(cfg)
    # a cluster's blocks as splits of their own (flash-decoding's partials through a workspace the
    # megakernel allocates, the last block of a group combining them): the same blocks, no cluster
    parts = int(cfg.get("cluster", 1)) * int(cfg.get("splits", 1))
    if int(cfg.get("cluster", 1)) > 1:
        cfg["cluster"] = 1
    if cfg.get("mode") == "decode":
        cfg["splits"] = int(decode_splits) or min(parts, 16)
        cfg.pop("tma", None)  # (a task takes no tensor maps)
        cfg.pop("trace", None)  # (nor a workspace of its own for timestamps)
        cfg.pop("early_keys", None)  # (a task waits for its counters before its body runs)
    else:
        cfg.pop("splits", None)
    cfg.pop("pdl_late", None)  # (no programmatic launches inside the megakernel)
    if int(cfg.get("threads", 0)) > max_threads:
        cfg["threads"] = max_threads
    if cfg.get("mode") == "decode":  # (16-key tiles measured slower: 29 against 19.5 us a layer, -2026-11-26c)
        cfg["warps"] = min(int(cfg.get("warps", 4)), 4, max(max_threads // 32, 1))
        # a two-slot ring: the kernels' four slots (batch 1: 128 KB at 32-key tiles, head dim 64)
        # left one worker per SM (bench/results/gpu-session27-2026-11-27/g/: 3.73 ms a step)
        cfg["stages"] = int(decode_stages) or min(int(cfg.get("stages", 2)), 2)
    if k is None:
        return cfg

    rendered: dict = {}  # (each schedule rendered once: the checks below ask again)

    def accepted(c):
        key = repr(sorted(c.items()))
        if key not in rendered:
            try:
                rendered[key] = render_kernel(k, c, target)[1]
            except Exception:  # noqa: BLE001 - the renderer refuses this schedule for this kernel
                rendered[key] = None
        return rendered[key]
    launch = accepted(cfg)
    if launch is None and int(cfg.get("splits", 1)) > 1:  # (no bound to size the workspace by)
        cfg["splits"] = 1
        launch = accepted(cfg)
    if launch is None:
        return cfg
    grid = launch.get("grid")
    if cfg.get("mode") == "block" and cfg.get("cache") == "smem" and grid == 1 and int(launch.get("smem", 0)) > TASK_SMEM:
        lean = {kk: v for kk, v in cfg.items() if kk != "cache"}
        if accepted(lean) is not None:
            cfg = lean
    if cfg.get("mode") == "block" and isinstance(grid, int) and grid >= 1024:
        # (no register row cache: 32 registers of it with 16 loads in flight spilled at 3 workers per SM)
        warp = {kk: v for kk, v in dict(cfg, mode="warp", threads=min(256, max_threads)).items() if kk != "cache"}
        wl = accepted(warp)
        if wl is not None and not (isinstance(wl.get("grid"), int) and wl["grid"] < warp_min_grid):
            cfg = warp
    elif cfg.get("mode") == "warp" and isinstance(grid, int) and grid < warp_min_grid:
        # (a warp-mode kernel's rows as one block each, where that gives more blocks)
        block = {kk: v for kk, v in dict(cfg, mode="block", threads=min(128, max_threads)).items() if kk != "cache"}
        bl = accepted(block)
        if bl is not None and isinstance(bl.get("grid"), int) and bl["grid"] > grid:
            cfg = block
    if max_smem is not None and int((accepted(cfg) or {}).get("smem", 0)) > max_smem:
        cfg = _fit_smem(cfg, accepted, max_smem)
    return cfg


def _fit_smem(cfg: dict, accepted, max_smem: int) -> dict:
    """`cfg` shrunk to at most `max_smem` bytes of shared memory where a smaller form exists: a
    decode ring of 16-key tiles, then fewer warps; a row kernel without its shared-memory cache."""
    if cfg.get("mode") == "decode":
        BN, W = int(cfg.get("BN", 32)), int(cfg.get("warps", 4))
        for bn, w in ((min(BN, 16), W), (BN, max(W // 2, 1)), (min(BN, 16), max(W // 2, 1)), (min(BN, 16), 1)):
            c = dict(cfg, BN=bn, warps=w)
            launch = accepted(c)
            if launch is not None and int(launch.get("smem", 0)) <= max_smem:
                return c
        return cfg
    if cfg.get("cache") == "smem":
        lean = {kk: v for kk, v in cfg.items() if kk != "cache"}
        if accepted(lean) is not None:
            return lean
    return cfg


def _params(text: str) -> list:
    """[(C type, name)] of a kernel's parameter list."""
    out = []
    for p in [p.strip() for p in text.split(",") if p.strip()]:
        m = re.match(r"(.*?)(\w+)$", p, re.S)
        out.append((m.group(1).strip(), m.group(2)))
    return out


def task_function(name: str, chunk: str, block: int, dim_map: list, constant: list,
                  free_running: bool = True, ahead: int = 0, weight_bytes: list | None = None,
                  evict: bool = False, preload: bool = False) -> tuple[str, str, list]:
    """(helpers before the kernel, the task function's source, its parameter types) of the kernel
    `name` rendered as `chunk`. dim_map[i]: the megakernel dim the kernel's i-th dim is; constant[i]:
    whether the kernel's i-th buffer argument is a weight (it keeps `const __restrict__`). The
    source is the kernel's body as a block function `{name}_blk`, inlined into the task function
    `{name}_task` that loops over the task's blocks [em_first_, em_end_) in steps of em_step_ (1, or
    the launch's task count where its blocks are dealt cyclically) — one call per task, not
    per block: a call's caller-saved registers are spilled and reloaded around it (4.2 M local
    memory requests a Llama-1B step with a call per block, bench/results/gpu-session28-2026-11-27/i/)
    — with a barrier between blocks unless `free_running` and the body shares nothing
    (`_sync_free`). `ahead` > 0 with `weight_bytes` (per buffer argument: the bytes of a large weight
    it is, else 0): before each block, thread 0 asks L2 for the slice of each such weight that the
    block `ahead` blocks later reads (rows in proportion: a GEMV's) — the megakernel's option
    `stream_blocks`, a weight stream inside a long task. `evict`: a weight's 16-byte loads go
    through `em_mk_ldw` (L1 not allocated, L2 evict-first: read once a step, they make room for
    the weights the stream asked for, which come in evict-last — the megakernel's option `evict`);
    with `preload` (and no dynamic shared memory in the kernel) through `em_mk_ldw_p`, which reads
    the bytes the dispatcher copied into the worker's shared memory before the task's wait from
    there (the megakernel's option `preload`)."""
    for pat, what in _FORBIDDEN:
        if re.search(pat, chunk):
            raise NotTaskable(f"kernel {name} uses {what}")
    m = _HEADER.search(chunk)
    if m is None or m.group(2) != name:
        raise NotTaskable(f"kernel {name}: its signature was not recognised")
    helpers = chunk[:m.start()]
    params = _params(m.group(3))
    types = []
    for i, (ty, pn) in enumerate(params):
        if pn == "em_dims_":
            types.append("const long long* __restrict__")
            continue
        keep = i < len(constant) and constant[i]
        types.append(ty if keep else ty.replace("__restrict__", "").strip())
    sig = ", ".join(f"{t} {pn}" for t, (_, pn) in zip(types, params))
    body = chunk[m.end():]
    body = re.sub(r"\bblockIdx\.x\b", "em_bid_", body)
    body = re.sub(r"\bgridDim\.x\b", "em_nblk_", body)
    body = re.sub(r"\bblockDim\.x\b", f"{block}u", body)
    for pdl in ("EM_GRID_DEPENDENCY();", "EM_GRID_DEPENDENCY_LATE();", "EM_PDL_WAIT();", "EM_PDL_TRIGGER();"):
        body = body.replace(pdl, "")  # (a task's dependencies are its epoch counters)
    body = _DYN_SMEM_DECL.sub("", body)
    body = re.sub(r"em_dims_\[(\d+)\]", lambda mm: f"em_dims_[{dim_map[int(mm.group(1))]}]", body)
    body = _SHARED_DECL.sub(lambda mm: "" if mm.group(0).strip() in HOISTED else mm.group(0), body)
    if evict:
        redirect = preload and "em_dyn_smem" not in body  # (uses_dynamic_smem)
        for i, (_, pn) in enumerate(params):
            if i < len(constant) and constant[i]:
                body = _weight_loads(body, pn, i if redirect and i < PRELOAD_SLOTS else None)
    lead = f"{sig}, " if sig else ""
    blk = f"static __device__ __forceinline__ void {name}_blk({lead}const unsigned em_bid_, const unsigned em_nblk_) {{" + body
    call = ", ".join([pn for _, pn in params] + ["b_", "em_nblk_"])
    sync = "" if free_running and _sync_free(blk) else " em_task_sync();"
    pf = ""
    weights = [(pn, n) for (_, pn), n in zip(params, weight_bytes or []) if n]
    if ahead > 0 and weights:
        nxt = f"b_ + {int(ahead)}u * em_step_"
        pf = (f" if (threadIdx.x == 0 && {nxt} < em_end_) {{ " +
              " ".join(f"em_mk_prefetch({pn}, {n}ull * ({nxt}) / em_nblk_, {n}ull * ({nxt} + 1u) / em_nblk_);"
                       for pn, n in weights) + " }")
    task = (f"static __device__ __noinline__ void {name}_task({lead}const unsigned em_first_, const unsigned em_end_, "
            f"const unsigned em_nblk_, const unsigned em_step_) {{\n"
            f"  for (unsigned b_ = em_first_; b_ < em_end_; b_ += em_step_) {{{pf} {name}_blk({call});{sync} }}\n}}")
    return helpers, blk + "\n\n" + task, types


def _weight_loads(body: str, pn: str, slot: int | None = None) -> str:
    """`*reinterpret_cast<const uint4*>(&pn[...])` -> `em_mk_ldw(&pn[...])` (brackets matched), or
    `em_mk_ldw_p(&pn[...], slot)` (the parameter's preload slot) when `slot` is given."""
    head = f"*reinterpret_cast<const uint4*>(&{pn}["
    out, i = [], 0
    while True:
        j = body.find(head, i)
        if j < 0:
            return "".join(out) + body[i:]
        k, depth = j + len(head), 1
        while depth:
            depth += {"[": 1, "]": -1}.get(body[k], 0)
            k += 1
        if body[k] != ")":  # (not the pattern after all: left as it is)
            out.append(body[i:k])
            i = k
            continue
        out.append(body[i:j] + (f"em_mk_ldw(&{pn}[" + body[j + len(head):k] + ")" if slot is None else
                                f"em_mk_ldw_p(&{pn}[" + body[j + len(head):k] + f", {slot})"))
        i = k + 1


PRELUDE_HEAD = """\
/* megakernel: a task's __syncthreads() is a barrier over the kernel's own threads only. Not
   `bar.sync` (= barrier.sync.aligned, which asks every thread of the block to execute the same
   instruction): barrier 1 is reached by a subset of the block and each warp arrives converged. */
__shared__ unsigned em_task_threads_;
__device__ __forceinline__ void em_task_sync() {
#ifdef EM_MK_BAR0_WHEN_FULL
  if (em_task_threads_ == blockDim.x) { asm volatile("barrier.sync 0;" ::: "memory"); return; }
#endif
  asm volatile("barrier.sync 1, %0;" :: "r"(em_task_threads_) : "memory");
}
#define __syncthreads() em_task_sync()
__device__ __forceinline__ void em_mk_prefetch(const void* p, unsigned long long lo, unsigned long long hi) {
  /* [p + lo, p + hi) into L2, 16-byte aligned (a hint: nothing depends on it) */
  const unsigned long long a = ((unsigned long long)p + lo + 15ull) & ~15ull, e = ((unsigned long long)p + hi) & ~15ull;
  if (e > a) {
#ifdef EM_MK_EVICT  /* (option evict: what the stream asks for stays until read) */
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("{\\n\\t.reg .u64 g;\\n\\tcvta.to.global.u64 g, %0;\\n\\tcp.async.bulk.prefetch.L2.global.L2::cache_hint [g], %1, %2;\\n\\t}"
                 :: "l"(a), "r"((unsigned)(e - a)), "l"(pol) : "memory");
#else
    asm volatile("{\\n\\t.reg .u64 g;\\n\\tcvta.to.global.u64 g, %0;\\n\\tcp.async.bulk.prefetch.L2.global [g], %1;\\n\\t}"
                 :: "l"(a), "r"((unsigned)(e - a)) : "memory");
#endif
  }
}
__device__ __forceinline__ uint4 em_mk_ldw(const void* p) {
  /* a weight read once a step: not kept in L1, first to leave L2 (option evict) */
  uint4 r;
  unsigned long long pol;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(pol));
  return r;
}
"""

def _grid_c(grid, dims: list) -> str:
    return sm.render_c(grid, {d: f"em_dims_[{i}]" for i, d in enumerate(dims)})


def render(source: str, launches: list, buffers: list, constants: set, dims: list, graph, threads: int,
           min_blocks, width: int, kernel_name: str = "em_megakernel", sizes: dict | None = None,
           prefetch_cap: int = 0, free_running: bool = True, stream: bool = False, fence: bool = True,
           prologues: dict | None = None, per_worker: dict | None = None, stream_blocks: int = 0,
           evict: bool = False, compact: bool = False, idle: bool = False, preload: int = 0) -> str:
    """The megakernel's source. `source`: the program rendered with `task_config` schedules;
    `launches`: its kernel launches (Launch objects); `buffers`: the megakernel's buffer arguments
    in order (every buffer a launch uses, then the task table and the sync buffer); `dims`: the
    program's dims (the megakernel reads them all); `graph`: the runtime/megakernel.py TaskGraph;
    `threads`, `min_blocks`: the worker's block size and the workers per SM it is compiled for (a
    number, or a placeholder the caller fills in);
    `width`: ints per task row of the table; `sizes`: bytes of each buffer, and `prefetch_cap`: the
    bytes of its share of each large constant a task asks L2 for before it waits (0: none);
    `free_running`: a task's blocks back to back without a barrier between them where its function
    needs none (`_sync_free`); `stream`: the weight stream (runtime/megakernel.py `stream_window`'s
    array is the buffer before the task table; every constant of PREFETCH_MIN bytes or more may be
    named in it); `fence`: a fence after each wait's acquire load (False: the acquire and the block
    barrier alone); `prologues`: {launch index: [one-block launches]} run by each of that launch's tasks
    first (the megakernel's option `replicate`), and `per_worker`: {buffer: elements} of the buffers
    each worker has a slice of (the prologue's output: worker w's at w * elements); `stream_blocks`:
    task functions ask L2 for their weights that many blocks ahead (`task_function`'s `ahead`);
    `evict`: `task_function`'s; `compact`: the dispatcher's compact form (one case per task function,
    codegen/cuda_megakernel_dispatch.py); `idle`: the stream's table holds idle pieces too
    (runtime/megakernel.py `stream_window`), asked for while a worker waits; `preload`: bytes of
    shared memory a worker copies each task's first weights into before its wait (the `mk_pl`
    buffer's table, runtime/megakernel.py `preload_table`; needs `evict` and `compact`)."""
    prelude, kernels = split_program(source)
    slot = {b: i for i, b in enumerate(buffers)}
    helpers_seen: dict = {}
    functions: dict = {}  # task function source -> its name (identical kernels share one)
    per_worker = per_worker or {}

    def task(l):  # (its function's name, its call's arguments, its block)
        chunk = kernels[l.kernel]
        block = int(l.config["block"])
        if block > threads or block % 32:
            raise NotTaskable(f"kernel {l.kernel}: {block} threads (the megakernel has {threads})")
        big = [sizes.get(a, 0) if sizes and a in constants and sizes.get(a, 0) >= PREFETCH_MIN else 0 for a in l.args]
        helpers, fn, types = task_function(l.kernel, chunk, block, [dims.index(d) for d in l.dims],
                                           [a in constants for a in l.args], free_running, stream_blocks, big, evict,
                                           bool(preload))
        if helpers.strip() and helpers not in helpers_seen:
            helpers_seen[helpers] = True
        canon = re.sub(rf"\b{re.escape(l.kernel)}_(task|blk)\b", lambda mm: f"EM_TASK_NAME_{mm.group(1)}", fn)
        fname = functions.get(canon)
        if fname is None:
            fname = functions[canon] = f"{l.kernel}_task"
        args = [f"({t.replace('__restrict__', '').strip()})p{slot[a]}" +
                (f" + (size_t)worker * {per_worker[a]}u" if a in per_worker else "") for t, a in zip(types, l.args)]
        if l.dims:
            args.append("em_dims_")
        return fname, args, block

    calls = []
    for i, l in enumerate(launches):
        fname, args, block = task(l)
        pro = [task(q) for q in (prologues or {})[i]] if i in (prologues or {}) else None
        grid = sm.from_json(l.config["grid"])
        calls.append((i, fname, args, block, _grid_c(grid, dims), pro))
    out = [PRELUDE_HEAD + (preload_helpers(preload) if preload else ""), prelude, "extern __shared__ __align__(1024) unsigned char em_dyn_smem[];", "\n".join(HOISTED)]
    out += list(helpers_seen)
    for canon, fname in functions.items():
        out.append(canon.replace("EM_TASK_NAME_task", fname).replace("EM_TASK_NAME_blk", fname[:-len("_task")] + "_blk"))
    out.append(DISPATCH_HEAD.replace("@TIMEOUT@", str(TIMEOUT_NS)))
    out.append(f"__constant__ unsigned em_mk_threads_[{max(len(calls), 1)}] = {{{', '.join(str(c[3]) for c in calls) or '0'}}};")
    prefetch = [(i, graph.blocks[i], [(slot[a], sizes[a]) for a in dict.fromkeys(l.args)
                                      if a in constants and sizes and sizes.get(a, 0) >= PREFETCH_MIN])
                for i, l in enumerate(launches)]
    streamed = sorted({s for _, _, consts in prefetch for s, _ in consts}) if stream else []
    out.append(dispatcher(calls, len(buffers), dims, threads, min_blocks, width, kernel_name, prefetch, prefetch_cap,
                           streamed, fence, compact, idle, slot.get("mk_pl") if preload else None))
    return "\n\n".join(out) + "\n"


_SYNCS = re.compile(r"sync|shared|smem|em_block_|barrier|bar\.|cp\.async|atomic|fence")


def _sync_free(fn: str) -> bool:
    """Whether a task function's blocks need no barrier between them: nothing in it synchronises
    or shares (no barrier, shared memory, block reduction, async copy, atomic or fence; a warp's
    shuffles are its own). Conservative: a name merely mentioning one of them counts."""
    return _SYNCS.search(fn) is None


