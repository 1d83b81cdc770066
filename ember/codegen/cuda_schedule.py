"""CUDA schedule heuristics: the default config of each kernel and the analyses it rests on
(vectorisation, the row cache plan, the tensor-core tile model), apart from the renderer
(codegen/cuda.py). The hardware numbers (SM count, shared memory, the tile table) come from the
Target (backends/target.py); `target=None` means the H100 preset's values.
"""
from __future__ import annotations

import dataclasses

import os
from dataclasses import dataclass

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.structure import (
    Canon,
    Contraction,
    StageInfo,
    _size,
    canonical,
    contraction_of,
)
from .clike import _lanes_contiguous  # noqa: F401 (re-exported)
from .cuda_walks import (  # noqa: F401
    _lanes_coalesced,
    _unit_stride,
    cols_vec_ok,
    columns_contiguous,
    loads_shared_by_columns,
    short_window_runs,
)
from ..kernel.guarded import applicable as guarded_applicable
from ..kernel.scan import applicable as scan_applicable
from ..kernel.scan import short_sum_form
from .cuda_scan import SCAN_PVEC, pvec_applicable
from .cuda_thread_window import thread_window
from .cuda_transpose import elementwise_config
from .cuda_mma import mma_applicable, one_pass
from .cuda_wgmma import _smem_limit, default_takes_wgmma, wgmma_applicable
from .cuda_wgmma_default import default_wgmma_config, rs_x3_default
from .cuda_wgmma_space import narrow_tiles, rs_plan
from ..kernel import layout_gemm

# The H100 preset's values (backends/cuda_target.py); a Target carries its own in `tuning`.
H100_SMS = 132  # H100 SXM
SMEM_CACHE_MAX = 200 * 1024  # bytes of dynamic shared memory a cached row may use (H100: 227 KB per block)
# decode attention asks L2 for its blocks' K / V rows while it waits for the kernel before it (knob
# `kv_prefetch`, codegen/cuda_flash_decode.py); EMBER_KV_PREFETCH=1 / 0 sets the default
KV_PREFETCH = os.environ.get("EMBER_KV_PREFETCH", "0") == "1"
DECODE_KT = int(os.environ.get("EMBER_DECODE_KT", "1"))  # flash-decoding's keys-major products (0: off; A/B runs)
DECODE_NARROW_WARPS = os.environ.get("EMBER_DECODE_NARROW_WARPS", "1") == "1"  # head dim 64: 8 warps (0: 4; A/B runs)
DECODE_STATIC_STEAL = os.environ.get("EMBER_DECODE_STATIC_STEAL", "1") == "1"  # those 8 warps interleaved (0: off; A/B runs)
# windows read in short runs that neighbouring outputs continue take a thread per output, not a warp
# (cuda_walks.short_window_runs; EMBER_SHORT_WINDOW_THREADS=0 off)
SHORT_WINDOW_THREADS = os.environ.get("EMBER_SHORT_WINDOW_THREADS", "1") == "1"
DECODE_GATHER = os.environ.get("EMBER_DECODE_GATHER", "1") == "1"  # the cluster's combine in rank 0 (0: off; A/B runs)
DECODE_DIRECT = os.environ.get("EMBER_DECODE_DIRECT", "0") == "1"  # each warp's partial straight to rank 0 (gather 2)
LONG_CACHE = 16384  # keys (or their bound) from which flash-decoding splits the keys over 8 clusters
CLUSTER_ROW_BYTES = 96 * 1024  # a cached row above this is shared by a cluster of 2 blocks


def tuning(target, key: str, default):
    """A renderer / schedule constant of `target` (None: the H100's, `default`)."""
    return default if target is None else target.tuning.get(key, default)


def sm_count(target) -> int:
    return H100_SMS if target is None else target.sm_count


def has_tensor_cores(target) -> bool:
    """Whether the target runs the warp-level TF32 MMAs the `mma` mode renders (sm_80 and later)."""
    return target is None or "mma.sync.tf32" in target.tensor_cores


def has_wgmma(target) -> bool:
    """Whether the target runs warpgroup MMAs from TMA-filled shared memory (sm_90a: the H100)."""
    return target is None or "wgmma" in target.tensor_cores


def has_clusters(target) -> bool:
    """Whether the target has thread-block clusters (sm_90: `__cluster_dims__`, distributed shared memory)."""
    return target is None or (target.compute_capability or (0, 0)) >= (9, 0)


# ------------------------------------------------------------------------------------------------
# vectorisation analysis


def _store_vec(k: ir.Kernel, st: ir.Store, loops: list, max_vec: int) -> int:
    """Largest vec (power of two, 16 bytes max) for which the innermost loop splits evenly and the
    store is contiguous and aligned."""
    if not loops:
        return 1
    var, ext = loops[-1]
    if not ext.is_const:
        return 1
    item = k.buffer(st.buffer).dtype.itemsize
    vec = max_vec
    while vec > 1:
        if ext.value % vec == 0 and vec * item <= 16 and _lanes_contiguous(st.index, var, vec):
            return vec
        vec //= 2
    return 1


def _reduce_vec(k: ir.Kernel, stage: StageInfo, max_vec: int) -> int:
    if not stage.loops:
        return 1
    var, ext = stage.loops[-1]
    if not ext.is_const:
        return 1
    vec = max_vec
    while vec > 1:
        if ext.value % vec == 0:
            loads = [v for v in ir.val_toposort([stage.update.value]) if v.op == "load" and not isinstance(v.args[1], ir.Val)]
            if any(_lanes_contiguous(v.args[1], var, vec) and v.dtype.itemsize * vec <= 16 for v in loads):
                return vec
        vec //= 2
    return 1


# ------------------------------------------------------------------------------------------------
# row cache: one read of the row for every stage


@dataclass
class RowCachePlan:
    n: int  # row length shared by every stage and the tail
    vec: int
    k: int  # unrolled steps per thread
    canon: Canon  # stages and tail rewritten over the shared position variable p_
    groups: list  # (buffer, index, valid) loaded once per row
    regs: int  # 32-bit registers per thread holding the cache
    ahead: tuple = ()  # groups only the tail reads (a norm's weight), loaded with the first stage's
    # loads: one memory latency overlapped instead of paid after the reductions


THREAD_CACHE_MAX = 128  # a thread-mode row (one thread per row) cached in up to this many registers


def row_cache_plan(k: ir.Kernel, c: Canon, T: int, max_vec: int, max_regs: int = 32,
                   in_smem: bool = False, target=None, scalar: bool = False) -> RowCachePlan | None:
    """Whether every stage and the tail walk the same row (one loop of the same static length), and the
    loads they share fit in registers: then the row is read from memory once instead of once per stage
    (softmax: 3 reads -> 1). A kernel with one value per row (argmax: a max, then the first index
    reaching it) has no tail loop: its stages share the row and one thread stores. `scalar`: one
    thread per row (thread mode, T = 1), one element per step, up to THREAD_CACHE_MAX steps (a
    softmax over the channels of an NCHW tensor, read by lanes along the pixels)."""
    if not c.stages or len(c.inner) > 1 or any(len(st.loops) != 1 for st in c.stages):
        return None
    n = c.inner[0][1] if c.inner else c.stages[0].loops[0][1]
    if not n.is_const or any(st.loops[0][1] is not n for st in c.stages):
        return None
    N = n.value
    P = sm.index_var("p_", N)
    stages = []
    for st in c.stages:
        v = ir.substitute(st.update.value, {st.loops[0][0]: P}, {})
        stages.append(StageInfo(st.acc, [("p_", n)], ir.Update(st.update.name, st.update.op, v)))
    if c.inner:
        o = c.inner[0][0]
        store = ir.Store(c.store.buffer, sm.substitute(c.store.index, {o: P}), ir.substitute(c.store.value, {o: P}, {}))
    else:
        store = c.store
    canon = Canon(c.outer, stages, [("p_", n)] if c.inner else [], store)
    uses: dict = {}
    for stmt_val in [st.update.value for st in stages] + [store.value]:
        for v in ir.val_toposort([stmt_val]):
            if v.op == "load" and not isinstance(v.args[1], ir.Val) and "p_" in sm.free_vars(v.args[1]):
                uses.setdefault(v.args, set()).add(id(stmt_val))
    shared = [key for key, u in uses.items() if len(u) >= 2]
    if scalar:  # (what every row reads alike, a bias, is one broadcast load: not worth a register)
        shared = [key for key in shared if sm.free_vars(key[1]) & {v for v, _ in c.outer}]
    if not shared:
        return None
    vec = _store_vec(k, store, [("p_", n)], max_vec) if c.inner else max_vec
    # the widest load of every shared group that divides the row: 16 bytes at most, also where the
    # store is narrower than a load (a bfloat16 row normalised from float32 had asked for 32 bytes)
    while vec > 1 and (N % vec or any(k.buffer(key[0]).dtype.itemsize * vec > 16 for key in shared)):
        vec //= 2
    while vec > 1 and not all(_lanes_contiguous(key[1], "p_", vec) and key[2] is sm.ONE for key in shared):
        vec //= 2
    if (vec == 1 and not scalar) or N % (T * vec):
        return None
    steps = N // (T * vec)
    regs_of = lambda keys: sum(-(-(k.buffer(key[0]).dtype.itemsize * vec) // 4) for key in keys) * steps  # noqa: E731
    regs = regs_of(shared)
    if in_smem:
        if regs * 4 * T > tuning(target, "smem_cache_max", SMEM_CACHE_MAX):
            return None
    elif steps > (THREAD_CACHE_MAX if scalar else 32) or regs > max_regs:
        return None
    ahead: list = []
    if not in_smem and not scalar and c.inner:
        written = {b.name for b in k.buffers if b.role != "in"}
        tail = [key for key, u in uses.items() if u == {id(store.value)} and key[0] not in written and key[2] is sm.ONE
                and k.buffer(key[0]).dtype.itemsize * vec <= 16 and _lanes_contiguous(key[1], "p_", vec)]
        for key in tail:  # while registers last
            if regs + regs_of(ahead + [key]) <= max_regs:
                ahead.append(key)
    return RowCachePlan(N, vec, steps, canon, shared + ahead, regs + regs_of(ahead), tuple(ahead))


def _cached_threads(k: ir.Kernel, c: Canon, max_vec: int, target=None) -> tuple | None:
    """(threads, "regs" | "smem", cluster): registers while a row's cache stays small (<= 16 per
    thread at 256 threads, where the rest of the kernel has room), else dynamic shared memory; a row
    that would fill most of an SM's shared memory is split over a cluster of two blocks, so that
    two half-rows' loads, reductions and stores overlap on each SM (softmax over 32768 floats:
    0.75-0.78 -> 0.83-0.84 of the copy floor, bench/results/variants-2026-11-21*.json)."""
    if row_cache_plan(k, c, 256, max_vec, max_regs=16) is not None:
        return 256, "regs", 1
    for T in (512, 1024):
        plan = row_cache_plan(k, c, T, max_vec, in_smem=True, target=target)
        if plan is not None:
            if plan.regs * 4 * T > tuning(target, "cluster_row_bytes", CLUSTER_ROW_BYTES) and \
                    has_clusters(target) and row_cache_plan(k, c, 1024, max_vec, in_smem=True, target=target):
                return 512, "smem", 2
            return T, "smem", 1
    return None


# ------------------------------------------------------------------------------------------------
# schedules


# (BM, BN, BK, WM, WN) and the TFLOP/s each reached on a float32 4096^3 product on the H100
# (bench/results/variants-2026-11-21.json): warp tiles of 64x64 reuse each fragment most
# 32 x 128 (one warp row): not timed on 4096^3; its rate is set from a conv with 32 output channels
# (bench/results/variants-conv-2026-11-21d.json: 3.1x the 64x64 tile's useful TFLOP/s there), so the
# model takes it only where M <= 32 would leave most of a taller tile empty
MMA_SMALL_TILE = (64, 64, 16, 2, 2)
MMA_DEFAULT_TILES = [((128, 256, 16, 2, 4), 63.6), ((128, 128, 16, 2, 2), 61.8), ((128, 64, 16, 2, 2), 54.3),
                     ((64, 128, 16, 2, 2), 55.0), (MMA_SMALL_TILE, 47.9), ((32, 128, 16, 1, 4), 36.0)]
# 64x128's rate is set between 64x64's and 128x128's from whole problems, not from the 4096^3 GEMM:
# convs with 64 output channels ran 11-14% faster in it than in 64x64, a 2048x1024x8192 product 11%
# faster than in 128x64 (bench/results/knob-sweep-2026-11-22.json)
def _default_mma_tile(M, N, K, B, target=None) -> dict:
    """The tile with the least estimated time: the padded work over the tile's rate, divided by how
    much of the last wave is busy (a 1024^3 product in 128x256 tiles would leave three quarters of
    the H100 idle). A 4-warp block shares its SM with another (two slots per SM). With K <= 64 the
    product is bound by writing C, and the smallest tile spreads that best. Symbolic sizes get the
    first tile."""
    tiles_table = tuning(target, "mma_tiles", MMA_DEFAULT_TILES)
    sms = sm_count(target)
    pick = tiles_table[0][0]
    if all(e.is_const for e in (M, N, K, B)):
        if K.value <= 64:
            pick = MMA_SMALL_TILE
        else:
            def cost(entry):
                (bm, bn, _, wm, wn), rate = entry
                tiles = -(-M.value // bm) * -(-N.value // bn) * B.value
                slots = sms * (2 if wm * wn <= 4 else 1)
                busy = tiles / (-(-tiles // slots) * slots)
                return tiles * bm * bn / rate / busy
            pick = min(tiles_table, key=cost)[0]
    return dict(zip(("BM", "BN", "BK", "WM", "WN"), pick), mode="mma")


# A conv with at most 64 output channels (M) fills a 64-row tile; 64 x 256 in one warp row gives each
# of its 4 warps a 64x64 warp tile (the best fragment reuse) where 64 x 128 in 2 x 2 warps gives 32x64.
# Measured on the H100 (bench/results/conv-m64-tile-2026-11-22e.json, default against default with
# the rule off, one machine): conv + ReLU + bias 8-10% faster, conv + BN + ReLU 13-17%, conv +
# HardSwish + avgpool 10-14%, conv + min + tanh 11%. Its 252 registers leave 2 blocks per SM: an
# epilogue of many operations (two Mish, ~60 per element) then runs latency-bound and lost 70%
# (knob-sweep-2026-11-22e-tiles.json), so the tile is taken only under a light epilogue; and with
# fewer than 4 tiles per SM the last partial wave costs more than the tile saves (the ResNet blocks'
# 392-tile convs: 10-15% slower with it).
MMA_CONV_M64_TILE = (64, 256, 16, 1, 4)
LIGHT_EPILOGUE_OPS = 12


def epilogue_ops(c: Canon) -> int:
    """ALU operations per output element in a contraction kernel's store (its epilogue)."""
    return sum(1 for v in ir.val_toposort([c.store.value]) if v.op not in ("load", "const", "acc", "index"))


def _conv_m64_tile(g: Contraction, c: Canon, cfg: dict, target=None) -> dict:
    M, N, B = _size(g.m), _size(g.n), _size(g.batch)
    if (len(g.k) > 1 and one_pass(g) and all(e.is_const for e in (M, N, B)) and 32 < M.value <= 64
            and (cfg["BM"], cfg["BN"]) == (64, 128) and -(-N.value // 256) * B.value >= 4 * sm_count(target)
            and epilogue_ops(c) <= LIGHT_EPILOGUE_OPS):
        return dict(cfg, **dict(zip(("BM", "BN", "BK", "WM", "WN"), MMA_CONV_M64_TILE)))
    return cfg


def _mma_pipeline(g: Contraction, cfg: dict) -> dict:
    """The k loop's default knobs (codegen/cuda_mma.py), as measured on whole KernelBench problems
    (bench/results/knob-sweep-2026-11-22*.json):

    * a plain GEMM (one k variable) in the 8-warp 128x256 tile whose tiles divide it prefetches
      unconditionally (`pf`): 3-14% on the square, batched, MLP and linear-chain GEMMs. In 64x64
      tiles it lost (the GRU loop 20%, K = 32 11%), and with ragged edges 23% (guarded loads);
    * an implicit-GEMM conv (several k variables) in one TF32 pass (ember/precision.py, or half
      operands) double-buffers shared memory (`stages`): AlexNet's stem 19%, the MobileNet blocks
      14%, the rest within 2% except transposed convs (2-5% slower). In three passes (float32
      accuracy) it lost: transposed convs 26%, MobileNet 12%."""
    M, N, K = (_size(x) for x in (g.m, g.n, g.k))
    if len(g.k) > 1:
        return dict(cfg, stages=2) if one_pass(g) else cfg
    if all(e.is_const for e in (M, N, K)) and M.value % cfg["BM"] == 0 and N.value % cfg["BN"] == 0 \
            and K.value % cfg["BK"] == 0 and cfg["BM"] * cfg["BN"] >= 128 * 256:
        return dict(cfg, pf=True)
    return cfg


def narrow_default(c, target) -> dict | None:
    """Few rows (at most 32: a conv's 32 output channels) against many columns: wgmma with the two
    swapped (the columns on a persistent tile's 128 rows, the rows on 32 columns) unless
    EMBER_WGMMA_SWAP_DEFAULT=0. Measured on the H200 (bench/results/gpu-session41-2026-11-28/d/):
    38_conv3d (TF32, 32 x 1M x 432) 705 us in `mma` -> 470; real KernelBench 78 4.24 -> 1.82 ms.
    The same 32-wide tile unswapped where the columns are the 32 (a channels-last conv's output
    channels, DenseNet's growth rate: `mma` 128 x 64 half empty) unless EMBER_WGMMA_N32=0. H200
    (gpu-session42-2026-11-28/a/): real KernelBench 14_DenseNet121DenseBlock 10.07 -> 7.08 ms,
    15_DenseNet121 10.91 -> 7.20, project 04_mobilenetv2_blocks 1.28 -> 1.03."""
    swap_on = os.environ.get("EMBER_WGMMA_SWAP_DEFAULT", "1") == "1"
    n32_on = os.environ.get("EMBER_WGMMA_N32", "1") == "1"
    offers = [cf for cf in narrow_tiles(c, _smem_limit(target)) if cf.get("persistent") and cf["BM"] == 128
              and (swap_on if cf.get("swap") else n32_on)]
    return offers[0] if offers else None


def rs_default(c, target) -> dict | None:
    """TF32 with one MN-major operand copied by TMA (an NCHW 1x1 conv's input, the W of `x @ W`) and
    EMBER_WGMMA_RS=1 (kernel/layout_gemm.py then leaves it as stored): the wgmma tile with that operand
    on A, its fragments loaded into registers (codegen/cuda_wgmma_rs.py) — swapped where it was B."""
    found = rs_plan(c) if layout_gemm.RS else None
    return default_wgmma_config(c, target, swap=found[0], rs=True) if found else None


# the fewest rows (M) for the default to take wgmma (64-row tiles; 32 fill half). At 32, H100 (gpu-session36-2026-11-28/
# b/, d/): real KB 71 7.29 -> 3.21 ms (its `mma` plan is slow: 514 x 1026 outputs), 78 4.24 -> 5.56, project 38 0.75 -> 1.14
WGMMA_MIN_M = int(os.environ.get("EMBER_WGMMA_MIN_M", "64"))


def default_config(k: ir.Kernel, target=None) -> dict:
    """The unsearched schedule for `target`: elementwise for maps; block/warp/thread by reduction length."""
    from ..kernel.structure import has_locals
    if has_locals(k):
        return flash_config(k, target) or {"mode": "rowlocal", "threads": 256}
    c = canonical(k)
    if not c.stages:
        return elementwise_config(c)
    if scan_applicable(c):  # a prefix sum (cumsum's blocks): a warp's shuffle scan (codegen/cuda_scan.py),
        # 4 positions a lane wherever they render (knob `pvec`: real KB cumsum 4.98 -> 3.55 ms, gpu-session47 b/)
        return {"mode": "scan", "threads": 256, "unroll": 8, **({"pvec": 4} if SCAN_PVEC and pvec_applicable(c, 4) else {})}
    if guarded_applicable(c):  # an embedding's gradient: the condition tested once per row and term
        return {"mode": "guarded", "threads": 128}
    g = contraction_of(c)
    if g is not None and few_bounded_rows(k, c, g):
        # a named row count bounded small (a batch-invariant decode step's batch, docs/serving.md):
        # a warp per weight row computing it against every row, 8 at a time (`rows`: the weight
        # chunk a lane loads serves 8 accumulators), so the weight is read once whatever the rows;
        # the schedule cannot follow the row count, so neither can a row's reduction order
        return {"mode": "warp", "threads": 256, "vec": 8, "order": "shared", "rows": 8}
    if g is not None:
        M, N, K = (_size(x) for x in (g.m, g.n, g.k))
        big = lambda e, n: (not e.is_const) or e.value >= n
        if big(M, 32) and big(N, 32) and big(K, 8):
            # (operands the producer must gather, a conv's input, are a search candidate only)
            if has_wgmma(target) and default_takes_wgmma(c) and big(M, WGMMA_MIN_M) and big(N, 64) and big(K, 64):
                # (a float32-accuracy conv's gathered pixels against few channels: tf32x3's RS form)
                return rs_x3_default(c, target) or default_wgmma_config(c, target)  # Hopper: TMA + wgmma (codegen/cuda_wgmma.py)
            rs = rs_default(c, target) if has_wgmma(target) and big(M, 64) and big(N, 64) and big(K, 64) else None
            if rs:  # (TF32 over one MN-major operand: its fragments from registers)
                return rs
            narrow = narrow_default(c, target) if has_wgmma(target) and big(K, 64) else None
            if narrow:  # (32 rows or 32 columns: a 32-wide wgmma tile)
                return narrow
            if mma_applicable(c) and has_tensor_cores(target):  # tensor cores (TF32; 3 passes keep float32 accuracy)
                tile = _default_mma_tile(M, N, K, _size(g.batch), target)
                return _mma_pipeline(g, _conv_m64_tile(g, c, tile, target))
            return {"mode": "gemm", "BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4}
        # a few rows against a large matrix (a decode step's projections at batch 8..31, or their
        # split-K partials): a 64-row wgmma tile mostly empty, but the matrix is read once by TMA,
        # where a warp per output reads it once per row
        few, many = sorted((M, N), key=lambda e: e.value if e.is_const else 1 << 40)
        plan = wgmma_applicable(c, gather=False)
        if has_wgmma(target) and few.is_const and 8 <= few.value < 32 and big(many, 256) and big(K, 64) \
                and not isinstance(plan, str) and plan[0] != "tf32x3":  # (float32 accuracy: not measured)
            return {"mode": "wgmma", "BM": 64, "BN": 128 if N is many else 64, "stages": 4}
        # a conv with few output channels (LeNet's second, 16 x 409600 x 150): tensor cores with a
        # partly empty 32-row tile beat a warp per output (1.8 ms on the H100) by far; so do many
        # small batched products (Mamba2's chunk states, 32768 of 64 x 16 x 64: a warp per output
        # reduced 64 terms, 8.4M blocks), the work counted over the batch where both sides fill at
        # least 16 of a tile (not a classifier's 10 rows split over k into 8 chunks)
        if mma_applicable(c) and has_tensor_cores(target) and big(M, 8) and big(N, 8) and big(K, 8) and (
                big(M * N, 1 << 16) or (big(M, 16) and big(N, 16) and big(M * N * _size(g.batch), 1 << 16))):
            return _mma_pipeline(g, _default_mma_tile(M, N, K, _size(g.batch), target))
    R = max((_size(s.loops) for s in c.stages), key=lambda e: e.vmax if e.is_const else 1 << 40)
    r = R.value if R.is_const else 1 << 20
    rows = _size(c.outer)
    nrows = rows.value if rows.is_const else 1 << 20
    # (a GEMV that recomputes its operand's row statistics first, kernel/recompute.py, is one too)
    # (row statistics first, then the products: SwiGLU's two; with the statistic taken out of the
    # products the stages are independent and run in one loop, knob `fuse`)
    dots = [contraction_of(dataclasses.replace(c, stages=[st])) is not None for st in c.stages]
    recomputes = bool(getattr(target, "fold_norms", False)) and g is None and len(dots) > 1 and dots[-1] \
        and not dots[0] and dots == sorted(dots)
    gemv = g is not None or recomputes
    if gemv and 256 <= r <= 2048 and nrows >= 1024 and not columns_contiguous(k, c):
        # a short matrix-vector product walking its matrix's rows (nn.Linear at batch 1, K <= 2048):
        # a warp per output keeps several 16-byte loads in flight per lane where a 256-thread block
        # has one per thread. Measured on the H100 with graph replays of a 256 MB matrix (from HBM,
        # bench/results/contractions-devtime-gemv-hbm-2026-11-25.json): 3.00 against 2.85 TB/s at
        # K = 2048; at K = 4096 and 8192 block mode won (3.02 against 2.94 and 2.91)
        return {"mode": "warp", "threads": 256, "vec": 8, **({"fuse": 1} if recomputes else {})}
    if r < 16 and nrows >= (1 << 16) and columns_contiguous(k, c) and os.environ.get("EMBER_COLS_OWN", "1") == "1":
        # a short window over channels-last pixels (ResNet-50's max pool, 64 us for 66 MB as a thread per
        # output, gpu-session39-2026-11-28/d/): cuda_rows.py knob `own`, on unless EMBER_COLS_OWN=0. H200
        # (gpu-session40-2026-11-28/a/): ResNet-50 bf16 1.95 -> 1.90 ms; project pools/split-K combines within noise
        if (cv := next((v for v in (8, 4, 2) if cols_vec_ok(k, c, v) is None), 0)):
            return {"mode": "cols", "threads": 128, "cvec": cv, "own": True}
    if r >= 16 and columns_contiguous(k, c):
        # four outputs per lane (8-byte loads of bf16) where that still leaves 3 blocks per SM: a
        # GEMV x @ W over a 2048 x 65536 W read from HBM, 2.06 -> 2.93 TB/s on the H100 (cuBLAS
        # 3.01); with fewer outputs the blocks it removes cost more (8192 outputs: 2.28 -> 0.58)
        # (bench/results/contractions-devtime-gemv-cvec-2026-11-25.json)
        if g is not None and nrows >= 3 * sm_count(target) * 32 * 4 and cols_vec_ok(k, c, 4) is None:
            return {"mode": "cols", "threads": 512, "cvec": 4}
        # enough threads in flight to cover memory latency: ~2^19 across the GPU
        w = 1
        while w < 32 and nrows * w < (1 << 19) and r >= 16 * w:
            w *= 2
        if w > 1:
            return {"mode": "cols", "threads": 32 * w}
        # a thread per row: a row its stages read more than once kept in registers (read once)
        cached = row_cache_plan(k, c, 1, 1, max_regs=THREAD_CACHE_MAX, scalar=True, target=target) is not None
        return {"mode": "thread", "threads": 128, "vec": 1, "cache": "regs"} if cached else thread_window(k, c, R)
    if 16 <= r <= 32 and nrows >= (1 << 15) and short_sum_form(c) is not None:
        # many short contiguous row sums (cumsum's block totals): a warp's lanes the terms, several
        # rows in flight a warp (codegen/cuda_scan.py). H100, bench/scan.py (gpu-session33-2026-11-27/d/):
        # 1M rows of 32 318 -> 50 us against warp mode (8 rows a warp; 4 rows 54), 32K rows 12.5 -> 8.5
        # (4 rows a warp; 8 rows 9.5)
        return {"mode": "scan", "threads": 256, "unroll": 8 if nrows >= (1 << 18) else 4}
    if r <= 1024 and nrows >= (1 << 16) and loads_shared_by_columns(c):
        return thread_window(k, c, R)
    if r <= 1024 and nrows >= (1 << 16) and SHORT_WINDOW_THREADS and short_window_runs(c):
        return thread_window(k, c, R)
    if r <= 1024 and row_cache_plan(k, c, 32, 8, target=target) is not None and nrows >= 512:
        return {"mode": "warp", "threads": 128, "vec": 8, "cache": "regs"}
    if r >= 256:
        t = _cached_threads(k, c, 8, target)
        if t is not None:
            cfg = {"mode": "block", "threads": t[0], "vec": 8, "cache": t[1]}
            return dict(cfg, cluster=t[2]) if t[2] > 1 else cfg
    if r >= 2048 or (r >= 256 and nrows < 1024):
        return {"mode": "block", "threads": 512 if r >= 16384 else 256, "vec": 8}
    if r >= 32:
        return {"mode": "warp", "threads": 128, "vec": 8}
    return thread_window(k, c, R)


# a symbolic row count bounded by at most this many rows runs as GEMVs. Measured on the H100
# (bench/results/gpu-session19-2026-11-26/f, g: a Llama-1B decode step over a named batch, context
# 1024): GEMVs 1.5 / 3.2 / 11.1 ms at 1 / 8 / 32 rows against the symbolic-row wgmma tile's 3.0 /
# 3.1 ms at 1 / 8 (`e/`): at 32 rows the GEMVs are instruction-bound (a multiply-add and a
# conversion per weight element and row), so bounds past 8 keep the tensor cores
FEW_ROWS = 8


def few_bounded_rows(k: ir.Kernel, c, g) -> bool:
    """A product of 2..8 rows, or of a symbolic row count with such a bound (sm.var("B", 1, 8)),
    into static columns over a static depth of at least 256, its matrix walked along its rows
    (nn.Linear). (One row keeps the GEMV rules below.)"""
    M, N, K = (_size(x) for x in (g.m, g.n, g.k))
    rows = M.vmax if not M.is_const else (M.value if 2 <= M.value and os.environ.get("EMBER_ROWS_GEMV", "1") != "0"
                                          else 1 << 30)
    return (rows <= FEW_ROWS and N.is_const and K.is_const and K.value >= 256
            and not columns_contiguous(k, c) and len(c.stages) == 1 and not c.inner)


def flash_config(k: ir.Kernel, target=None) -> dict | None:
    """The `flash` schedule (codegen/cuda_flash.py) when kernel `k` is in online-softmax form and the
    target has the tensor cores it uses; else None."""
    from ..kernel.online import online_form
    from .cuda_flash import flash_applicable
    from .cuda_flash_decode import decode_applicable, query_vars
    form = online_form(k)
    if form is None:
        return scores_config(k, target)
    if decode_applicable(k, form) is None:  # a few query rows: the keys split over a cluster's blocks
        groups = sm.prod([e for v, e in form.rows if (v, e) not in query_vars(form)])
        n = groups.value if groups.is_const else 16
        # blocks enough to cover the SMs, a key range of its own for each; measured on an H200
        # (bench/results/attention-decode-2026-11-26b.json) clusters of 16 (non-portable) ran
        # slower than 8: 16-block clusters must share a GPC, and fewer of them are co-resident
        cluster = next((cl for cl in (1, 2, 4) if cl * n >= 0.9 * sm_count(target)), 8)
        # (EMBER_DECODE_CLUSTER: an A/B switch; clusters of 2 / 4 ran the Llama-1B step slower than 8 at
        # contexts 1024 and 4096, gpu-session32-2026-11-27/g/)
        cluster = int(os.environ.get("EMBER_DECODE_CLUSTER", cluster))
        # 4 warps; where the blocks are few (batch 1: clusters of 8) each warp's ring 4 deep. Measured
        # on the H100 as 16 layers in one graph replay (bench/attention.py --decode-layers 16 --variants,
        # bench/results/gpu-session19-2026-11-26/l/): 8K keys at head dim 128 61 -> 68% of copy
        # bandwidth, 64 51 -> 54%, 32K keys 77 -> 83% against 8 warps x 2 stages (the H200's choice
        # from one-kernel replays, attention-decode-2026-11-26c.json); 16 keys a tile at head dim 128,
        # 32 at 64
        stages = 4 if cluster == 8 else 2
        cfg = {"mode": "decode", "warps": 4, "BN": 16 if form.depth.value >= 128 else 32, "stages": stages,
               "cluster": cluster}
        # head dim 64 over few groups (clusters of 8) and a long cache of known length: 8 warps of 16-key
        # tiles, a 3-deep ring, two score chains — with the early keys and the gathered combine 61.2 ->
        # 66.5% of copy bandwidth at 8K keys, batch 1 (gpu-session32-2026-11-27/d/; every 6- and 8-warp
        # schedule 64-66%; e/ 66.2). Not for a cache whose length is a named dim (a decode step serving
        # every position): the Llama-1B step at context 1024 ran slower with it (kernels 1.078 -> 1.111
        # ms, e/). At head dim 128 more warps measured no faster (76% against 79)
        long_known = form.keys.is_const and form.keys.value >= 4096
        narrow = cluster == 8 and long_known and form.depth.value < 128 and form.out_extent.value < 128 and DECODE_NARROW_WARPS
        if narrow:
            cfg.update(warps=8, BN=16, stages=3)
        # a long cache (its bound) over few groups: 16 blocks a group as 8 clusters of 2 whose partials
        # the last block combines (knob `splits`). Measured on the H100 as 16 layers in one graph
        # replay (gpu-session26-2026-11-27/a/): batch 1, 8 kv heads, 32K keys, head dim 128 82 -> 90% of
        # copy bandwidth (SDPA 88%); at 8K keys no split was faster than one cluster of 8 (66%)
        keys = form.keys.value if form.keys.is_const else form.keys.vmax
        # — unless the cluster's combine is gathered (knob `gather`, the default): one cluster of 8 then
        # ran faster at 32K in both runs of the thirty-second session (gpu-session32-2026-11-27/a/, b/:
        # 92.2 / 96.7% against the splits' 90.5 / 94.7)
        if cluster == 8 and LONG_CACHE <= keys < float("inf") and 16 * n <= sm_count(target) and not DECODE_GATHER:
            cfg.update(cluster=2, splits=8)
        # keys-major products (knob `kt`, codegen/cuda_flash_kt.py; groups of at most 8 rows, else the
        # renderer keeps the row-major form), 16 layers in one graph replay on the H100: with the
        # ldmatrix offsets kept in registers (gpu-session31-2026-11-27/e/) batch 1 x 8K keys at head
        # dim 128 68.4 -> 70.9% of copy bandwidth, at 64 55.4 -> 58.8%, batch 4 x 8K 76.9-81.0 ->
        # 78.7-82.8% over the same schedules (d/: 65.2 -> 68.2% at 128 before the offsets). Knobs `kt`
        # 2 (two chains of score products) and `affine` (the copies' lane offsets kept too) measured
        # within that run's noise (+-3%) at batch 1, up to 87% at batch 4: searched, not the default
        if DECODE_KT:
            cfg["kt"] = 2 if narrow else DECODE_KT
        # a cluster's combine gathered into rank 0 (knob `gather`, codegen/cuda_flash_gather.py): faster
        # in every case of gpu-session32-2026-11-27/a/ (16 layers, H100): batch 1 x 8K keys 69.5 -> 72.6%
        # of copy bandwidth at head dim 128, 56.2 -> 57.5 at 64, batch 4 x 8K 81.9 -> 83.4
        if DECODE_GATHER and int(cfg.get("cluster", 1)) > 1 and int(cfg.get("splits", 1)) == 1:
            cfg["gather"] = 2 if DECODE_DIRECT and cfg.get("kt") else 1  # (2: codegen/cuda_flash_direct.py)
        # head dim 64's 8 warps: the cluster's tiles one pool interleaved over its warps (knob `steal`
        # "static", no counter): 67.4 -> 68.6% of copy bandwidth at 8K keys and 50.4 -> 51.6 at 4K, in
        # each of three interleaved repetitions (gpu-session33-2026-11-27/a/, 16 layers, H100)
        if narrow and cfg.get("gather") == 1 and DECODE_STATIC_STEAL:
            cfg["steal"] = "static"
        if KV_PREFETCH:  # each block's K / V rows asked of L2 before the grid-dependency wait
            cfg["kv_prefetch"] = 1
        return cfg
    if not has_tensor_cores(target) or flash_applicable(k, form) is not None:
        return None
    # measured on an H200 (bench/results/attention-variants-2026-11-26a.json, bf16, B 4, 32 heads):
    # head dim 128 runs fastest as 8 warps x 128 keys (232 TFLOP/s causal at 4096 keys, 280 non-causal;
    # 4 x 64: 192 / 215), head dim 64 as 4 warps x 64 keys (188 against 148-180)
    if form.depth.value >= 128 or form.out_extent.value >= 128:
        return {"mode": "flash", "warps": 8, "BN": 128}
    return {"mode": "flash", "warps": 4, "BN": 64}


def scores_config(k: ir.Kernel, target=None) -> dict | None:
    """The `scores` schedule (codegen/cuda_scores.py: attention's backward, scores recomputed per key
    tile) when kernel `k` is in streamed-score form and the target has the tensor cores it uses."""
    from ..kernel.scores import score_forms
    from .cuda_scores import scores_applicable, scores_smem
    form = score_forms(k)  # (several: sibling kernels merged, kernel/siblings.py)
    if form is None or not has_tensor_cores(target) or any(scores_applicable(k, g) is not None for g in form):
        return None
    limit = int(getattr(target, "smem_per_block", 0) or 227 * 1024)
    # measured on the H100 (bench/results/gpu-session26-2026-11-27/j/, causal bf16, each kernel of the
    # backward): 4 warps x 64 keys fastest for every kernel at head dims 64 and 128 (the whole
    # backward 442 / 1233 us; x 32 keys 465 / 1293; 8 warps 600-700 / 1500+ in e/, f/)
    # two accumulators of head dim 128 (dK and dV merged, kernel/siblings.py) leave no registers for
    # the row operands' fragments: those are read from shared memory at each k step
    extra = {"afrag": "smem"} if sum(f.out_extent.value for f in form if f.tail == "mma") > 128 else {}
    for warps, BN in ((4, 64), (4, 32), (2, 32)):
        if scores_smem(form, warps, BN) <= limit:
            return {"mode": "scores", "warps": warps, "BN": BN, **extra}
    return None
