"""The megakernel's persistent dispatcher (codegen/cuda_megakernel.py renders the task functions):
per task of a worker's list, the weight stream's next requests, warp 0's waits on the counters of
the launches it depends on, the worker's barrier, the task function's call, the barrier and the
release of the launch's counter.

Two forms of the call. The plain one: one `case` per launch (the launch's buffers as kernel
parameters, its grid). The compact one (option `compact`): the buffers' addresses are copied into
shared memory once per run, and one `case` per task function reads a launch's buffer slots and
grid from constant tables — the same few cases every layer instead of one per launch, so the
dispatcher's code stays small and in the instruction cache (each launch's case was run once a step
on each SM, a cold fetch every time). A launch whose grid depends on a dim, or that runs a
replicated producer first, keeps a case of its own.
"""
from __future__ import annotations

import re

COUNTER_STRIDE = 32  # one 128-byte line per counter shard (no false sharing between hot counters)
SHARDS = 8  # each launch's counter is split over this many words (task i bumps word i % SHARDS)
STRIDE_HEAD = 6  # a task row: launch, first block, end block, number of waits, task index, block step; then (launch, count) pairs
SYNC_EPOCH, SYNC_EXIT, SYNC_COUNTERS = 0, 32, 64  # word offsets in the sync buffer; counters 32 words apart
TIMEOUT_NS = 5_000_000_000  # a wait this long is a hang: report and trap
PRELOAD_SLOTS = 16  # a task function's parameters that may be preloaded (their positions)


def preload_helpers(nbytes: int) -> str:
    """The preload's shared state and `em_mk_ldw_p` (a weight's 16-byte load, from the worker's copy
    in shared memory when the address is in the range the dispatcher copied for this task's
    parameter `k`, else as `em_mk_ldw`)."""
    K = PRELOAD_SLOTS
    return f"""__shared__ __align__(128) unsigned char em_mk_wbuf_[{int(nbytes)}];
__shared__ const char* em_mk_wlo_[{K}];
__shared__ unsigned em_mk_wlen_[{K}];
__shared__ unsigned em_mk_woff_[{K}];
__device__ __forceinline__ uint4 em_mk_ldw_p(const void* p, int k) {{
  const unsigned long long d = (unsigned long long)((const char*)p - em_mk_wlo_[k]);
  if (d < em_mk_wlen_[k]) return *reinterpret_cast<const uint4*>(em_mk_wbuf_ + em_mk_woff_[k] + d);
  return em_mk_ldw(p);
}}
"""


def _preload_src(pl: int, thread: int) -> str:
    """Before a task's waits, one thread copies the first bytes of the task's weights (the `mk_pl`
    table: per task (parameter, buffer slot, first 16-byte unit, units)) into the worker's shared
    memory with bulk copies that complete on an mbarrier; after the waits every thread waits for
    them (`_preload_wait`). The previous task's reads of the buffer ended at the worker's barrier."""
    K = PRELOAD_SLOTS
    return f"""    if (threadIdx.x == {thread}) {{  /* the preload: this task's first weights into shared memory */
      const int* pl = (const int*)p{pl};
      const int a = pl[1 + t], b = pl[2 + t];
      for (int k = 0; k < {K}; ++k) em_mk_wlen_[k] = 0u;
      em_mk_wpend_ = b > a;
      if (b > a) {{
        unsigned total = 0;
        for (int s = a; s < b; ++s) total += 16u * (unsigned)pl[pl[0] + 4 * s + 3];
        const unsigned bar = (unsigned)__cvta_generic_to_shared(&em_mk_wbar_);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(total) : "memory");
        unsigned off = 0;
        for (int s = a; s < b; ++s) {{
          const int* q = pl + pl[0] + 4 * s;
          const char* src = (const char*)em_ptr_[q[1]] + 16ull * (unsigned)q[2];
          const unsigned n = 16u * (unsigned)q[3];
          em_mk_wlo_[q[0]] = src; em_mk_wlen_[q[0]] = n; em_mk_woff_[q[0]] = off;
          asm volatile("{{\\n\\t.reg .u64 g;\\n\\tcvta.to.global.u64 g, %1;\\n\\t"
                       "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [g], %2, [%3];\\n\\t}}"
                       :: "r"((unsigned)__cvta_generic_to_shared(em_mk_wbuf_ + off)), "l"(src), "r"(n), "r"(bar) : "memory");
          off += n;
        }}
      }}
    }}
"""


PRELOAD_HEAD = """  __shared__ __align__(8) unsigned long long em_mk_wbar_;
  __shared__ int em_mk_wpend_;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"((unsigned)__cvta_generic_to_shared(&em_mk_wbar_)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  unsigned em_mk_wphase = 0u;  /* the parity of the preload's next completion */"""

PRELOAD_WAIT = """
    if (em_mk_wpend_) {  /* this task's preloaded weights have landed */
      const unsigned bar = (unsigned)__cvta_generic_to_shared(&em_mk_wbar_);
      unsigned ok = 0u;
      while (!ok)
        asm volatile("{\\n\\t.reg .pred p;\\n\\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n\\tselp.u32 %0, 1, 0, p;\\n\\t}"
                     : "=r"(ok) : "r"(bar), "r"(em_mk_wphase) : "memory");
      em_mk_wphase ^= 1u;
    }"""

DISPATCH_HEAD = """\
#undef __syncthreads
#ifndef EM_MK_TIMEOUT_NS
#define EM_MK_TIMEOUT_NS @TIMEOUT@ull
#endif
#ifndef EM_MK_SPIN
#define EM_MK_SPIN 64  /* tight polls of a wait before it sleeps between polls (option spin) */
#endif
#ifndef EM_MK_IDLE_NS
#define EM_MK_IDLE_NS 256  /* the idle stream's pause between pieces (option idle_ns) */
#endif
#ifndef EM_MK_SLEEP_NS
#define EM_MK_SLEEP_NS 64  /* (option sleep_ns) */
#endif
__device__ __forceinline__ unsigned long long em_mk_now() {
  unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ unsigned em_mk_hash(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16; return x;
}
__device__ __forceinline__ unsigned em_mk_load_acquire(const unsigned* p) {
  unsigned v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
#ifdef EM_MK_RELAXED_POLL  /* (option relaxed_poll: relaxed polls, one acquire load once the count is there) */
__device__ __forceinline__ unsigned em_mk_poll(const unsigned* p) {
  unsigned v; asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}
#endif
__device__ __forceinline__ void em_mk_signal(unsigned* p) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(p) : "memory");
}
__device__ __noinline__ void em_mk_hang(const unsigned* c, unsigned need, int worker, int launch) {
  printf("ember megakernel: worker %d waited over %llu ms for launch %d (a counter at %u, needs %u): a hang\\n",
         worker, (unsigned long long)(EM_MK_TIMEOUT_NS / 1000000ull), launch, *(volatile const unsigned*)c, need);
  __trap();
}
__device__ __forceinline__ void em_mk_wait(const unsigned* c, unsigned need, int worker, int launch) {
  /* need is (that shard's tasks per run) * (epoch + 1): compared by a signed difference, so it wraps safely */
#ifndef EM_MK_RELAXED_POLL
  for (int spin = 0; spin < EM_MK_SPIN; ++spin)
    if ((int)(em_mk_load_acquire(c) - need) >= 0) return;
  const unsigned long long t0 = em_mk_now();
  while ((int)(em_mk_load_acquire(c) - need) < 0) {
    __nanosleep(EM_MK_SLEEP_NS);
    if (em_mk_now() - t0 > EM_MK_TIMEOUT_NS) em_mk_hang(c, need, worker, launch);
  }
#else
  int spin = 0;
  const unsigned long long t0 = em_mk_now();
  while ((int)(em_mk_poll(c) - need) < 0) {
    if (++spin > EM_MK_SPIN) __nanosleep(EM_MK_SLEEP_NS);
    if (em_mk_now() - t0 > EM_MK_TIMEOUT_NS) em_mk_hang(c, need, worker, launch);
  }
  (void)em_mk_load_acquire(c);  /* reads the count seen or a later one: synchronizes with every release before it */
#endif
}
"""


def _prefetch_cases(prefetch: list, cap: int) -> str:
    """Per launch, its large constants' slices for a task's blocks [first, end) of `blocks`, as
    L2 prefetches of at most `cap` bytes each (the weights a GEMV task streams: rows in proportion)."""
    out = []
    for i, blocks, consts in prefetch:
        if not consts or blocks <= 0:
            continue
        lines = [f"      case {i}: {{"]
        for slot, nbytes in consts:
            lines.append(f"        {{ const unsigned long long lo = {nbytes}ull * first / {blocks}u, "
                         f"hi = {nbytes}ull * end / {blocks}u; em_mk_prefetch(p{slot}, lo, lo + {cap}ull < hi ? lo + {cap}ull : hi); }}")
        lines.append("        break;\n      }")
        out.append("\n".join(lines))
    return "\n".join(out)


def _stream_src(slots: list, nbuf: int, thread: int, compact: bool = False, idle: bool = False) -> str:
    """The weight stream's step before a task waits: one thread asks L2 for the task's segments of
    the worker's window (runtime/megakernel.py `stream_window`: slot, first and end 16-byte unit)."""
    if not slots:
        return ""
    cases = "default: w = em_ptr_[q[0]]; break;" if compact else " ".join(f"case {s}: w = p{s}; break;" for s in slots)
    ask = f"""const int* q = pf + pf[0] + 3 * s;
        const void* w = 0;
        switch (q[0]) {{ {cases}{'' if compact else ' default: break;'} }}
        if (w) em_mk_prefetch(w, 16ull * (unsigned)q[1], 16ull * (unsigned)q[2]);"""
    if not idle:
        return f"""    if (threadIdx.x == {thread}) {{  /* the weight stream: this worker's next bytes of weights asked of L2 */
      const int* pf = (const int*)p{nbuf - 3};
      for (int s = pf[1 + t]; s < pf[2 + t]; ++s) {{
        {ask}
      }}
    }}
"""
    # (the idle stream: further pieces, one at a time, while warp 0 still waits — em_mk_waiting_ is
    # set before the barrier that ends the previous task and cleared by warp 0 when its waits are done)
    return f"""    if (threadIdx.x == {thread}) {{  /* the weight stream: this worker's next bytes of weights asked of L2 */
      const int* pf = (const int*)p{nbuf - 3};
      for (int s = pf[1 + 2 * t]; s < pf[2 + 2 * t]; ++s) {{
        {ask}
      }}
      for (int s = pf[2 + 2 * t]; s < pf[3 + 2 * t] && em_mk_waiting_; ++s) {{
        {ask}
        __nanosleep(EM_MK_IDLE_NS);
      }}
    }}
"""


def dispatcher(calls: list, nbuf: int, dims: list, threads: int, min_blocks, width: int, name: str,
                prefetch: list | None = None, prefetch_cap: int = 0, streamed: list | None = None,
                fence: bool = True, compact: bool = False, idle: bool = False, preload_slot: int | None = None) -> str:
    params = ", ".join(f"void* p{i}" for i in range(nbuf))
    # (with the preload every buffer's address is in shared memory: its table names weights by slot)
    shared = _compact(calls, nbuf, threads, list(streamed or []) + (list(range(nbuf)) if preload_slot is not None else [])) \
        if compact else None
    if shared is not None:
        tables, ptrs, fn_cases = shared
        calls = [c for c in calls if c[0] in fn_cases[1]]  # (the launches that keep a case of their own)
    tasks, sync = f"((const int*)p{nbuf - 2})", f"((unsigned*)p{nbuf - 1})"
    dparam = ", const long long* __restrict__ em_dims_" if dims else ""
    cases = []
    for i, fname, args, block, grid, pro in calls:
        guard = f"if (threadIdx.x < {block}) " if block < threads else ""
        # (a replicated one-block producer: each task runs it into the worker's slice of its output
        # first, then the barrier; its consumer's blocks read that slice)
        pre = "" if pro is None else "".join(
            f"if (first < e) {{ {'if (threadIdx.x < %d) ' % q[2] if q[2] < threads else ''}"
            f"{q[0]}({', '.join(q[1] + ['0u', '1u', '1u', '1u'])}); __syncthreads(); }}\n        " for q in pro)
        # (the task function loops over its blocks; one without shared memory or barriers runs them
        # back to back, each warp on to its next block's rows without waiting for the others: the
        # barrier after the switch ends the task)
        cases.append(f"""      case {i}: {{
        const unsigned nb = (unsigned)({grid});
        const unsigned e = end < nb ? end : nb;
        {pre}{guard}if (first < e) {fname}({', '.join(args + ['first', 'e', 'nb', 'step'])});
        break;
      }}""")
    cases_src = "\n".join(cases)
    pf = _prefetch_cases(prefetch or [], prefetch_cap) if prefetch_cap else ""
    pf_src = f"""    if (threadIdx.x == 32) {{  /* this task's weights start for L2 while its inputs are awaited */
      switch (launch) {{
{pf}
      default: break;
      }}
    }}
""" if pf else ""
    idle = idle and bool(streamed)
    pf_src += _stream_src(streamed or [], nbuf, 32 if threads > 32 else 0, shared is not None, idle)
    preload = preload_slot is not None and shared is not None and threads > 32
    if preload:
        pf_src += _preload_src(preload_slot, 32)
    # (an acquire load then the block's barrier is enough for the block to see the producers' writes,
    # as CUTLASS's semaphores have it: fence=False drops the fence grid.sync keeps after its wait)
    fence_src = "          __threadfence();" if fence else "          /* (acquire, then the block barrier) */"
    C, S, L = SYNC_COUNTERS, SHARDS, COUNTER_STRIDE
    call_src = f"""switch (launch) {{
{cases_src}
      default: break;
    }}"""
    head_src = ""
    pre_head = "\n" + PRELOAD_HEAD if preload else ""
    pre_wait = PRELOAD_WAIT if preload else ""
    idle_head = ("\n  __shared__ volatile int em_mk_waiting_;\n  if (threadIdx.x == 0) em_mk_waiting_ = 1;" if idle else "")
    idle_clear = "\n      if (threadIdx.x == 0) em_mk_waiting_ = 0;" if idle else ""
    idle_set = "\n    if (threadIdx.x == 0) em_mk_waiting_ = 1;  /* (the next task's idle stream may run until its waits end) */" if idle else ""
    if shared is not None:
        call_src = fn_cases[0] + f""" else switch (launch) {{
{cases_src}
      default: break;
    }}"""
        head_src = ptrs
    return (tables if shared is not None else "") + f"""extern "C" __global__ void __launch_bounds__({threads}, {min_blocks}) {name}({params}{dparam}) {{
  const int* em_tab_ = {tasks};
  unsigned* em_sync_ = {sync};
  __shared__ unsigned em_epoch_;
  if (threadIdx.x == 0) em_epoch_ = *(volatile unsigned*)(em_sync_ + {SYNC_EPOCH});
{head_src}{idle_head}{pre_head}
  __syncthreads();
  const unsigned epoch = em_epoch_;
  const int nworkers = (int)gridDim.x, worker = (int)blockIdx.x;
  const int first_task = em_tab_[worker], last_task = em_tab_[worker + 1];
  for (int t = first_task; t < last_task; ++t) {{
    const int* row = em_tab_ + (nworkers + 1) + t * {width};
    const int launch = row[0];
    const unsigned first = (unsigned)row[1], end = (unsigned)row[2], step = (unsigned)row[5];
{pf_src}    if (threadIdx.x < 32) {{  /* warp 0 waits for every shard of every launch this one depends on */
      const int nw = row[3];
      for (int q = threadIdx.x; q < nw * {S}; q += 32) {{
        const int d = row[{STRIDE_HEAD} + 2 * (q / {S})], j = q % {S};
        const unsigned n = (unsigned)row[{STRIDE_HEAD + 1} + 2 * (q / {S})];
        const unsigned per = (n + {S - 1}u - (unsigned)j) / {S}u;  /* tasks of d in shard j */
        if (per) {{
          em_mk_wait(em_sync_ + {C} + (d * {S} + j) * {L}, per * (epoch + 1u), worker, d);
{fence_src}
        }}
      }}
#ifdef EM_MK_JITTER
      if (threadIdx.x == 0) __nanosleep(em_mk_hash((unsigned)t * 2654435761u ^ epoch * 40503u ^ EM_MK_JITTER) % 4096u);
#endif
#ifdef EM_MK_TRACE
      if (threadIdx.x == 0) ((unsigned long long*)p{nbuf - 1})[EM_MK_TRACE + 2 * t] = em_mk_now();
#endif
      if (threadIdx.x == 0) em_task_threads_ = em_mk_threads_[launch];{idle_clear}
      __syncwarp();  /* the lanes left the spin waits at different times: reconverge before the block barrier */
    }}
    __syncthreads();{pre_wait}
    {call_src}{idle_set}
    __syncthreads();
    if (threadIdx.x == 0) {{
#ifdef EM_MK_JITTER
      __nanosleep(em_mk_hash((unsigned)t * 40503u ^ epoch * 2654435761u ^ EM_MK_JITTER) % 4096u);
#endif
#ifdef EM_MK_TRACE
      ((unsigned long long*)p{nbuf - 1})[EM_MK_TRACE + 2 * t + 1] = em_mk_now();
#endif
      em_mk_signal(em_sync_ + {C} + (launch * {S} + row[4] % {S}) * {L});
    }}
  }}
  if (threadIdx.x == 0) {{  /* the last worker out advances the epoch for the next run */
    __threadfence();
    if (atomicAdd(em_sync_ + {SYNC_EXIT}, 1u) == (unsigned)nworkers - 1u) {{
      em_sync_[{SYNC_EXIT}] = 0u;
      __threadfence();
      atomicAdd(em_sync_ + {SYNC_EPOCH}, 1u);
    }}
  }}
}}"""


_ARG = re.compile(r"^\(([^()]*)\)p(\d+)$")


def _compact(calls: list, nbuf: int, threads: int, streamed: list):
    """(constant tables, the copy of the buffers' addresses into shared memory, (the switch over task
    functions, the launches that keep their own case)) for the compact dispatcher, or None when no
    launch can use it."""
    table_fn, table_nb, table_at, flat, own = [], [], [], [], set()
    funcs: dict = {}  # (function, block, argument types) -> its case number
    for i, fname, args, block, grid, pro in calls:
        parsed = [_ARG.match(a) for a in args if a != "em_dims_"]
        if pro is not None or not all(parsed) or not re.fullmatch(r"\d+", grid.strip()):
            own.add(i)
            table_fn.append(0), table_nb.append(0), table_at.append(0)
            continue
        key = (fname, block, tuple(m.group(1) for m in parsed), "em_dims_" in args)
        table_fn.append(funcs.setdefault(key, len(funcs) + 1))
        table_nb.append(int(grid))
        table_at.append(len(flat))
        flat += [int(m.group(2)) for m in parsed]
    if not funcs or len(funcs) > 255:
        return None
    slots = sorted(set(flat) | set(streamed))
    n = len(calls)
    tables = (f"__constant__ unsigned char em_mk_fn_[{n}] = {{{', '.join(map(str, table_fn))}}};\n"
              f"__constant__ unsigned em_mk_nb_[{n}] = {{{', '.join(map(str, table_nb))}}};\n"
              f"__constant__ unsigned short em_mk_argat_[{n}] = {{{', '.join(map(str, table_at))}}};\n"
              f"__constant__ unsigned short em_mk_args_[{max(len(flat), 1)}] = {{{', '.join(map(str, flat)) or '0'}}};\n\n")
    ptrs = (f"  __shared__ void* em_ptr_[{nbuf}];  /* the buffers' addresses, indexed by the tables' slots */\n"
            f"  if (threadIdx.x == 0) {{ {' '.join(f'em_ptr_[{s}] = p{s};' for s in slots)} }}")
    cases = []
    for (fname, block, types, dims), k in funcs.items():
        guard = f"if (threadIdx.x < {block}) " if block < threads else ""
        a = [f"({t})em_ptr_[a_[{j}]]" for j, t in enumerate(types)] + (["em_dims_"] if dims else [])
        cases.append(f"      case {k}: {guard}if (first < e) {fname}({', '.join(a + ['first', 'e', 'nb', 'step'])}); break;")
    body = "\n".join(cases)
    switch = f"""if (const int fn_ = em_mk_fn_[launch]) {{  /* one case per task function: its buffers and grid from the tables */
      const unsigned nb = em_mk_nb_[launch];
      const unsigned e = end < nb ? end : nb;
      const unsigned short* a_ = em_mk_args_ + em_mk_argat_[launch];
      switch (fn_) {{
{body}
      default: break;
      }}
    }}"""
    return tables, ptrs, (switch, own)
