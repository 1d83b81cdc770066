"""Hopper tensor-core contractions: the ``wgmma`` mode of the CUDA renderer (sm_90a).

The contraction kernels of the ``mma`` mode (kernel/structure.py's `Contraction`), where both
operands are plain strided loads the copy engine can stage (codegen/cuda_tma.py), computed as
research/hopper-tensor-cores.md measured it at 90% of cuBLAS:

* a block of 1 producer warpgroup and NC = BM / 64 consumer warpgroups; one producer thread issues
  TMA copies (`cp.async.bulk.tensor`) of the a and b tiles of each BK slice into a ring of `stages`
  shared-memory slots, 128-byte swizzled (BK = 128 bytes of k: 64 bf16/f16, 32 f32);
* `full[s]` mbarriers complete when a slot's bytes have landed (expect_tx), `empty[s]` when every
  consumer warp has released it;
* each consumer warpgroup owns 64 rows and issues `wgmma.mma_async.m64nBNk16` (k8 for TF32) from
  the two shared-memory descriptors, keeping a 64 x BN float32 accumulator in registers
  (BN / 2 per thread). With `overlap` it waits for the previous slice's group only (wait_group 1),
  so the tensor cores always have the next slice queued;
* the epilogue is the kernel's store (any fused elementwise work, the output's own layout and type)
  evaluated per accumulator register from the fragment map: register i of thread t (warp w, lane l)
  is row 16w + l/4 + 8((i/2)%2), column 8(i/4) + 2(l%4) + i%2.

K-major operands take the descriptor's canonical 128B-swizzle K-major layout (a k16 step is +32
bytes); MN-major ones (b of `x @ W`, a of `x.T @ y`) are copied as 64-row chunks and read with the
instruction's transpose bit (a k16 step is +16 rows = 2048 bytes). TF32 has no transpose bit.

Float32 operands at float32 accuracy (TF32 not allowed) take kind tf32x3: each slot also holds the
operands' TF32 remainders ("lo" tiles), the consumers issue lo*hi + hi*lo + hi*hi per k step, and
the producer splits what TMA copied (codegen/cuda_wgmma_feed.py).
"""
from __future__ import annotations

import dataclasses
import os

from .. import symbolic as sm
from ..kernel.structure import Canon, UnsupportedKernel, _size, contraction_of
from .cuda_tma import SWIZZLE_BYTES, TmaOperand, launch_spec
from .cuda_wgmma_mcast import MCAST_HELPERS, emit_pair_sizes, mcast_on, pair_grid, pair_loop
from .cuda_wgmma_streamk import emit_fixup, streamk_on, workspace_bytes
from .cuda_wgmma_kcluster import emit_cluster_epilogue, emit_k_range, emit_producer_syncs, kcluster_size, sum_unroll, tile_loop
from .cuda_wgmma_epilogue import (SOWN_SLACK, emit_register_epilogue, emit_staged_epilogue, half_staging, own_epilogue_bytes,
                                  pairable, staged_epilogue, unpaired_columns, wide_lanes)
from .cuda_wgmma_feed import CPASYNC_HELPER, GatherOperand, emit_producer, full_count, tf32_staged, wgmma_plan
from .cuda_wgmma_im2col import IM2COL_HELPER, Im2colOperand, im2col_operand, narrow_desc
from .cuda_wgmma_rs import RS_HELPER, RS_MAX_REGISTERS, RS_REGS, emit_rs_offsets, emit_rs_slice, rs_applies, rs_kmajor, rs_registers, wgmma_rs_fn
from .cuda_wgmma_im2col import launch_entry as im2col_entry
from .cuda_wgmma_staged import emit_staged_producer, staged_bytes
from ..kernel import layout_gemm  # (COLUMN_BATCH: the outermost column as a batch, outer_columns_as_batch)

WGMMA_HELPERS = r"""#ifndef EM_WGMMA_HELPERS
#define EM_WGMMA_HELPERS
typedef unsigned int em_u32; typedef unsigned long long em_u64;
// shared-memory matrix descriptor: start>>4 [0,14), LBO>>4 [16,30), SBO>>4 [32,46), 128B swizzle [62,64)
__device__ __forceinline__ em_u64 em_gdesc(em_u32 saddr, em_u32 lbo, em_u32 sbo) {
  return (em_u64)((saddr & 0x3FFFF) >> 4) | ((em_u64)((lbo >> 4) & 0x3FFF) << 16) |
         ((em_u64)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}
// the same in layout `mode` (0 none, 3 32B, 2 64B: an im2col tile of narrow pixels, codegen/cuda_wgmma_im2col.py)
__device__ __forceinline__ em_u64 em_gdesc_x(em_u32 saddr, em_u32 lbo, em_u32 sbo, em_u32 mode) {
  return (em_u64)((saddr & 0x3FFFF) >> 4) | ((em_u64)((lbo >> 4) & 0x3FFF) << 16) |
         ((em_u64)((sbo >> 4) & 0x3FFF) << 32) | ((em_u64)mode << 62);
}
__device__ __forceinline__ void em_mbar_init(em_u32 bar, em_u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void em_mbar_expect_tx(em_u32 bar, em_u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void em_mbar_arrive(em_u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void em_mbar_wait(em_u32 bar, em_u32 parity) {
  em_u32 done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
__device__ __forceinline__ void em_tma_acquire(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"((em_u64)map) : "memory");
  asm volatile("prefetch.tensormap [%0];" :: "l"((em_u64)map) : "memory");
}
__device__ __forceinline__ void em_tma2(em_u32 dst, const void* map, em_u32 bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"((em_u64)map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void em_tma3(em_u32 dst, const void* map, em_u32 bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"((em_u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
__device__ __forceinline__ void em_tma4(em_u32 dst, const void* map, em_u32 bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"((em_u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void em_tma5(em_u32 dst, const void* map, em_u32 bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"((em_u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar) : "memory");
}
__device__ __forceinline__ void em_st_shared_v4(em_u32 addr, em_u32 a, em_u32 b, em_u32 c, em_u32 d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
__device__ __forceinline__ em_u32 em_wg_tf32(float x) { em_u32 r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
// 3xTF32: 4 floats stored as TF32 hi at a, their remainders lo_off bytes after
__device__ __forceinline__ void em_split3_store(em_u32 a, em_u32 lo_off, const float* x) {
  const em_u32 h0 = em_wg_tf32(x[0]), h1 = em_wg_tf32(x[1]), h2 = em_wg_tf32(x[2]), h3 = em_wg_tf32(x[3]);
  em_st_shared_v4(a, h0, h1, h2, h3);
  em_st_shared_v4(a + lo_off, em_wg_tf32(x[0] - __uint_as_float(h0)), em_wg_tf32(x[1] - __uint_as_float(h1)),
                  em_wg_tf32(x[2] - __uint_as_float(h2)), em_wg_tf32(x[3] - __uint_as_float(h3)));
}
// a landed (raw float32) chunk of 4 at src written as hi at dst (src itself: in place), lo lo_off after
__device__ __forceinline__ void em_split3_copy(em_u32 src, em_u32 dst, em_u32 lo_off) {
  float x[4];
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(x[0]), "=f"(x[1]), "=f"(x[2]), "=f"(x[3]) : "r"(src) : "memory");
  em_split3_store(dst, lo_off, x);
}
// plain TF32 through the staging ring (tf32_staged): 4 floats rounded to TF32 at a; a landed chunk copied so
__device__ __forceinline__ void em_tf32_store(em_u32 a, em_u32, const float* x) {
  em_st_shared_v4(a, em_wg_tf32(x[0]), em_wg_tf32(x[1]), em_wg_tf32(x[2]), em_wg_tf32(x[3]));
}
__device__ __forceinline__ void em_tf32_copy(em_u32 src, em_u32 dst, em_u32) {
  float x[4];
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(x[0]), "=f"(x[1]), "=f"(x[2]), "=f"(x[3]) : "r"(src) : "memory");
  em_tf32_store(dst, 0, x);
}
__device__ __forceinline__ void em_wg_fence()  { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void em_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void em_wg_wait0()  { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
__device__ __forceinline__ void em_wg_wait1()  { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }
#endif"""

# tf32x3 folds its accumulator into a second one every PROMOTE_SLICES k slices (knob `promote`; 0:
# never) where K reaches PROMOTE_MIN_K: the tensor core adds each product into the float32
# accumulator with truncation (no rounding to nearest), an error biased one way that grows with
# every k step — over K = 32768 (KernelBench's ShallowWideMLP, VanillaRNN) 1.5-2.6e-4, above
# float32's 1e-4 tolerance; a fresh accumulator per window is small, its truncation too, and the
# folds round to nearest. The second accumulator takes BN / 2 registers: tiles up to 128 wide.
# EMBER_PROMOTE_MIN_K overrides the K from which it folds (an experiment knob).
PROMOTE_SLICES, PROMOTE_MIN_K = 4, int(os.environ.get("EMBER_PROMOTE_MIN_K", "2048"))

INSTR = {"bf16": ("k16", "bf16", 16), "f16": ("k16", "f16", 16), "tf32": ("k8", "tf32", 8),
         "tf32x3": ("k8", "tf32", 8)}  # (three TF32 products per k step)


def promote_slices(kind: str, K: int, cfg: dict) -> int:
    """k slices per fold of the accumulator (0: none) — tf32x3 over long k (PROMOTE_SLICES)."""
    if "promote" in cfg:
        return int(cfg["promote"])
    return PROMOTE_SLICES if kind == "tf32x3" and K >= PROMOTE_MIN_K else 0


def wgmma_fn(kind: str, n: int, trans_a: int, trans_b: int) -> tuple[str, str]:
    """(name, source) of the device function issuing one m64n{n} wgmma of `kind` from two
    shared-memory descriptors into n/2 float accumulators."""
    kshape, ty, _ = INSTR[kind]
    name = f"em_wgmma_{ty}_n{n}_t{trans_a}{trans_b}"
    regs = ", ".join(f"%{i}" for i in range(n // 2))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(n // 2))
    tail = f"p, 1, 1, {trans_a}, {trans_b}" if ty != "tf32" else "p, 1, 1"
    src = (f"#ifndef EM_{name.upper()}\n#define EM_{name.upper()}\n"
           f"__device__ __forceinline__ void {name}(float* d, em_u64 da, em_u64 db) {{\n"
           f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{n // 2 + 2}, 0;\\n"\n'
           f'    "wgmma.mma_async.sync.aligned.m64n{n}{kshape}.f32.{ty}.{ty} {{{regs}}}, %{n // 2}, %{n // 2 + 1}, {tail};\\n}}\\n"\n'
           f'    : {outs}\n    : "l"(da), "l"(db), "r"(1));\n}}\n#endif')
    return name, src


def wgmma_contraction(c: Canon, swap: bool = False):
    """The kernel's contraction as the wgmma mode tiles it: the output's fastest dims on the tile's
    columns (n), or with knob `swap` on its rows (m) — a conv with few output channels (32: half a
    64-row tile) and many pixels then has the pixels on the rows and the channels on the columns,
    the epilogue storing each column's values apart. On by default for exactly 32 rows (cuda_schedule.narrow_default)."""
    g = contraction_of(c)
    if g is None:
        return g
    if swap:
        g = dataclasses.replace(g, m=g.n, n=g.m, a=g.b, b=g.a, a_k_fastest=g.b_k_fastest, b_k_fastest=g.a_k_fastest)
    return outer_columns_as_batch(g)


def outer_columns_as_batch(g):
    """g with its outermost column variable made a batch variable where the copy engine then takes both operands
    and could not before: an NCHW 1x1 conv's pixels over images of 784 (28^2) — not whole 64-pixel chunks, so
    no chunk of the flat pixel index stays inside one image; as a batch, a tile's columns stay inside one image
    (its last tile zero-filled past the image), the input a three-dimensional tensor map (pixels, channels,
    images). The weights do not read the image: a batch variable they read with stride 0. On by default since the
    forty-eighth session (layout_gemm.COLUMN_BATCH: its CUDA tests pass; the 28^2 conv 75.2 -> 14.5 us with shalf)."""
    if not layout_gemm.COLUMN_BATCH or len(g.n) < 2 or not g.n[0][1].is_const:
        return g
    if not isinstance(wgmma_plan(g, gather=False), str):
        return g
    g2 = dataclasses.replace(g, batch=g.batch + g.n[:1], n=g.n[1:])
    return g2 if not isinstance(wgmma_plan(g2, gather=False), str) else g


def wgmma_applicable(c: Canon, gather: bool = True, swap: bool = False, rs: bool = False) -> tuple | str:
    """The contraction's feed plan (kind, a feed, b feed), or why the wgmma mode does not apply.
    gather=False: only operands the copy engine stages (TMA) qualify; swap: knob `swap`."""
    g = wgmma_contraction(c, swap)
    if g is None:
        return "not a contraction"
    if any(not e.is_const for _, e in g.n + g.k + g.batch + g.m[1:]):
        # (the outermost m loop may be symbolic — a prompt's length: its tensor map's extent is
        # evaluated at launch, the tile count is a run-time expression)
        return "symbolic sizes other than the outermost row loop's"
    return wgmma_plan(g, gather, rs)


def default_takes_wgmma(c: Canon) -> bool:
    """Whether the unsearched schedule takes the wgmma mode: both operands copied by TMA (or one
    gathered as whole 16-byte chunks). Measured
    for float32 at float32 accuracy (tf32x3) on the H100 (bench/results/f32-contractions-2026-11-26*.json):
    K-major operands 1.4-1.9x the mma mode's 3xTF32 (f32 4096^3 x @ W.T 89 against 64 TFLOP/s);
    MN-major ones through the staging ring 0.99-1.2x (x.T @ g 67 against 68, a training step's
    input gradient 66 against 60, its weight gradient 39 against 32)."""
    plan = wgmma_applicable(c)
    if isinstance(plan, str):
        return False
    # or gathered as whole 16-byte chunks (a channels-last conv's input: kernel/layout.py)
    chunks = os.environ.get("EMBER_WGMMA_CHUNK_GATHER", "1") == "1"
    return all(not isinstance(f, GatherOperand) or (chunks and f.vector is not None) for f in plan[1:])


def slice_elems(kind: str) -> int:
    """Elements of k in one 128-byte swizzled row: a k slice (BK)."""
    return SWIZZLE_BYTES // (4 if kind in ("tf32", "tf32x3") else 2)


def im2col_default() -> bool:
    """The copy engine walks a conv's input unless EMBER_WGMMA_IM2COL=0 (measured on the H200 in the 38th
    session, bench/results/gpu-session38-2026-11-28/b/: every project conv 0.72-1.10x -> 1.03-2.13x eager,
    ResNet-50 bf16 2.60 -> 2.34 ms, real KernelBench 55 5.92 -> 3.06 ms)."""
    return os.environ.get("EMBER_WGMMA_IM2COL", "1") == "1"


def _as_im2col(w, g, kind: str, p):
    """Gathered operand p as an im2col copy where it is one (else p itself)."""
    if not isinstance(p, GatherOperand):
        return p
    q = im2col_operand(g, p, slice_elems(kind), {b.name: b.size for b in w.k.buffers})
    return p if isinstance(q, str) else q


def _sizes(w, g, BM: int, BN: int) -> None:
    I = w.IDX
    M, N, K, B = _size(g.m), _size(g.n), _size(g.k), _size(g.batch)
    w.emit(1, f"const {I} M_ = {w.idx(M)}, N_ = {w.idx(N)}, K_ = {w.idx(K)};")
    w.emit(1, f"const {I} mt_ = (M_ + {BM - 1}) / {BM}, nt_ = (N_ + {BN - 1}) / {BN};")
    w.emit(1, f"const {I} ntiles_ = mt_ * nt_ * {w.idx(B)};")


def _tile_origin(w, g, group: int, ind: int) -> None:
    """The tile (bm_, bn_) and batch entry of tile number tile_. group > 0: the tiles run in groups
    of `group` row tiles, rows fastest within a group (blocks in flight share b's columns in L2);
    0: columns fastest (the mma mode's order)."""
    I = w.IDX
    mt, pair = ("mt2_", "2 * ({}) + mr_") if getattr(w, "mcast", False) else ("mt_", "{}")  # (mcast: pair tiles)
    w.emit(ind, f"{I} blk_ = tile_;")
    if group <= 0:
        w.emit(ind, f"const {I} bn_ = blk_ % nt_; blk_ /= nt_;")
        w.emit(ind, f"const {I} bm_ = {pair.format(f'blk_ % {mt}')}; blk_ /= {mt};")
    else:
        w.emit(ind, f"const {I} t_ = blk_ % ({mt} * nt_); blk_ /= {mt} * nt_;")
        w.emit(ind, f"const {I} g0_ = t_ / ({group} * nt_) * {group};")
        w.emit(ind, f"const {I} gs_ = {mt} - g0_ < {group} ? {mt} - g0_ : {group};")
        w.emit(ind, f"const {I} bm_ = {pair.format(f'g0_ + (t_ % ({group} * nt_)) % gs_')}, bn_ = (t_ % ({group} * nt_)) / gs_;")
    w.decompose("blk_", g.batch, ind)


def _smem_limit(target, occupancy: int = 1) -> int:
    """Dynamic shared memory one block may take with `occupancy` blocks per SM (each block also
    holds its barriers and the 1 KB the hardware reserves per block)."""
    per_block = target.smem_per_block if target is not None else 227 * 1024
    per_sm = (target.smem_per_sm if target is not None else None) or 228 * 1024
    return per_block if occupancy == 1 else per_sm // occupancy - 2048


def _smem_bytes(BM: int, BN: int, stages: int, copies: int = 1, staged: int = 0, rs_x3: bool = False) -> int:
    """copies: 2 for tf32x3 (hi and lo tiles); staged: rows of MN-major tf32x3 operands copied raw
    into staging tiles (BM, BN or both); rs_x3: tf32x3's RS form, A's tile raw (no lo tile)."""
    return stages * ((BM + BN) * copies - (BM if rs_x3 and copies == 2 else 0) + staged) * SWIZZLE_BYTES + 1024  # + slack to align


def _copies(kind: str) -> int:
    return 2 if kind == "tf32x3" else 1


def _staged_rows(kind: str, pa, pb, BM: int, BN: int) -> int:
    """Rows of staging per slot: tf32x3's MN-major TMA operands land raw there to be transposed."""
    if kind != "tf32x3":
        return 0
    return sum(R for p, R in ((pa, BM), (pb, BN)) if isinstance(p, TmaOperand) and not p.kmajor)


def consumer_warpgroups(cfg: dict) -> int:
    """One per 64 rows of the tile, or two on alternate 64-row tiles (knob `pingpong`)."""
    return 2 if cfg.get("pingpong") else int(cfg["BM"]) // 64


def render_wgmma(w, c: Canon):
    """Emit the kernel body into writer `w` (codegen/cuda.py's _KernelWriter); returns the grid."""
    swap = bool(w.cfg.get("swap", False))
    plan = wgmma_applicable(c, bool(w.cfg.get("gather", True)), swap, bool(w.cfg.get("rs", False)))
    if isinstance(plan, str):
        raise UnsupportedKernel(f"{w.k.name}: wgmma mode does not apply ({plan})")
    kind, pa, pb = plan
    g = wgmma_contraction(c, swap)
    cfg = w.cfg
    # knob `pingpong`: two consumers on alternate 64-row tiles of a persistent loop, one's epilogue under
    # the other's products (CUTLASS's ping-pong schedule); each slot is one consumer's, and a consumer
    # starts a tile's products only once the other's are done (named barriers 5 and 6), so it never
    # waits on a slot two fills ahead (an mbarrier's parity cannot tell). Untimed
    pingpong = bool(cfg.get("pingpong", False))
    if pingpong or cfg.get("streamk"):  # (stream-K: one block per SM walking segments, codegen/cuda_wgmma_streamk.py)
        cfg = dict(cfg, persistent=True)
    rs = rs_applies(plan, cfg)  # (an MN-major TF32 a, or tf32x3's a: its fragments from registers, codegen/cuda_wgmma_rs.py)
    im2col = bool(cfg.get("im2col", im2col_default()))  # (codegen/cuda_wgmma_im2col.py; the RS form's a stays gathered)
    if im2col:
        pa, pb = pa if rs else _as_im2col(w, g, kind, pa), _as_im2col(w, g, kind, pb)
    BM, BN, stages = int(cfg["BM"]), int(cfg["BN"]), int(cfg.get("stages", 4))
    overlap = bool(cfg.get("overlap", True))
    if BM not in (64, 128) or BN % 32 or not 32 <= BN <= 256 or not 2 <= stages <= 8:
        raise UnsupportedKernel(f"wgmma tile {BM}x{BN} with {stages} stages (BM 64 or 128, BN 32..256 by 32, 2-8 stages)")
    NC = consumer_warpgroups(cfg)
    tsplit = tf32_staged(plan) and not rs  # (TF32 over an MN-major copy: transposed from the staging ring)
    if pingpong and (BM != 64 or kind == "tf32x3" or tsplit or int(cfg.get("occupancy", 1)) != 1):
        raise UnsupportedKernel(f"wgmma ping-pong with a {BM}-row tile ({kind}): 64-row tiles, one block per SM, no tf32x3")
    P = int(cfg.get("producers", 1))  # producer warpgroups (more than one only gather)
    T = 128 * (NC + P)
    if P not in (1, 2) or (T > 384 and BN > 128):  # 512 threads: 128 registers, 64 accumulators at most
        raise UnsupportedKernel(f"wgmma with {P} producer warpgroups and a {BM}x{BN} tile")
    w.T = T
    x3 = kind == "tf32x3"
    promote = promote_slices(kind, _size(g.k).value, cfg)
    if promote and BN > 128:  # (two accumulators of BN / 2 registers each)
        raise UnsupportedKernel(f"wgmma accumulator folds (promote {promote}) with a {BN}-wide tile (128 at most)")
    if rs and rs_registers(BN, overlap, promote, x3) > RS_MAX_REGISTERS:
        raise UnsupportedKernel(f"wgmma RS form ({kind}) with a {BN}-wide tile: {rs_registers(BN, overlap, promote, x3)} registers")
    occupancy = int(cfg.get("occupancy", 1))
    smem_max = _smem_limit(w.target, occupancy)
    # tf32x3 with both operands copied: a staging ring of its own (codegen/cuda_wgmma_staged.py),
    # by default where an operand is MN-major (its staging tile would otherwise sit in the slots)
    ring_staged = x3 and not rs and isinstance(pa, TmaOperand) and isinstance(pb, TmaOperand) and \
        bool(cfg.get("staged", not (pa.kmajor and pb.kmajor)))  # (RS: a lands as it lies, b is K-major)
    if tsplit and not cfg.get("staged", True):
        raise UnsupportedKernel("TF32 over an MN-major copy without the staging ring")
    ring_staged = ring_staged or tsplit
    if ring_staged and P > 1:  # (the staged producer is one warpgroup: a second would never arrive on `full`)
        raise UnsupportedKernel(f"the staging ring with {P} producer warpgroups")
    srows = 0 if ring_staged else _staged_rows(kind, None if rs else pa, pb, BM, BN)
    sdepth = 0
    if ring_staged:
        cp = _copies(kind)
        sdepth = int(cfg.get("sdepth", 0)) or max((d for d in range(2, 5) if staged_bytes(BM + BN, stages, d, cp) <= smem_max), default=2)
        smem = staged_bytes(BM + BN, stages, sdepth, cp)
    else:
        smem = _smem_bytes(BM, BN, stages, _copies(kind), srows, rs)
    # two blocks per SM leave 128 registers per thread (256 threads each) or 80 (384): only a 64 x <=128
    # tile's accumulators (64 per thread) fit beside the addressing
    if occupancy not in (1, 2) or (occupancy == 2 and (NC == 2 or BN > 128)):
        raise UnsupportedKernel(f"wgmma occupancy {occupancy} with a {BM}x{BN} tile (two blocks per SM take 64 x 64..128)")
    # knob `sown`: the staged epilogue in a buffer of its own after the ring (codegen/cuda_wgmma_epilogue.py), so a
    # persistent block's producer fills the ring with its next tile while the consumers walk this one's outputs
    sown = bool(cfg.get("sown", False))
    if sown and (x3 or tsplit or rs or ring_staged or pingpong):  # (ping-pong's consumers are both cw_ 0)
        raise UnsupportedKernel(f"wgmma knob sown with {kind}{' rs' if rs else ''}{' staged' if ring_staged else ''}")
    half = half_staging(w, c, g, cfg)  # (knob `shalf`: the tile staged as its 16-bit outputs)
    if sown:
        smem += own_epilogue_bytes(NC, BN, half)
    if smem > smem_max - (SOWN_SLACK if sown else 0):
        raise UnsupportedKernel(f"wgmma tile {BM}x{BN} x {stages} stages{' + its epilogue buffer' if sown else ''} needs {smem} "
                                f"bytes of shared memory (max {smem_max})")
    BK = slice_elems(kind)
    _, _, kstep = INSTR[kind]
    A_BYTES, B_BYTES = BM * SWIZZLE_BYTES, BN * SWIZZLE_BYTES
    # (tf32x3 and tf32_staged write every operand K-major: an MN-major one is transposed by the split)
    ka, kb = pa.kmajor or x3 or tsplit, pb.kmajor or x3 or tsplit
    fname, fsrc = wgmma_rs_fn(BN) if rs else wgmma_fn(kind, BN, 0 if ka else 1, 0 if kb else 1)
    w.lines.insert(0, fsrc)
    if rs:
        w.lines.insert(0, RS_HELPER)
    if cfg.get("mcast"):
        w.lines.insert(0, MCAST_HELPERS)
    w.lines.insert(0, WGMMA_HELPERS)
    # whole-chunk gathers as cp.async copies (codegen/cuda_wgmma_feed.py, CPASYNC_HELPER's comment)
    cpasync = bool(cfg.get("cpasync", os.environ.get("EMBER_WGMMA_CPASYNC", "0") == "1")) and (not x3 or (rs and not isinstance(pb, GatherOperand))) and \
        any(isinstance(p, GatherOperand) and p.vector is not None for p in (pa, pb))
    if cpasync:
        w.lines.insert(1, CPASYNC_HELPER)
    if any(isinstance(p, Im2colOperand) for p in (pa, pb)):
        if ring_staged:
            raise UnsupportedKernel("an im2col copy into the tf32x3 staging ring")
        w.lines.insert(1, IM2COL_HELPER)
    params = {b.name: i for i, b in enumerate(w.k.buffers)}

    def box(p: TmaOperand, R: int) -> list:
        b = ([BK, R] if p.kmajor else [SWIZZLE_BYTES // p.dtype.itemsize, BK]) + [1] * (p.rank - 2)
        if p.r_inner and not p.kmajor:  # (MN-major: each 128-byte chunk of rows inside a run, tma_operand)
            return b
        if p.r_inner:  # rows as two runs: a tile is whole inner runs, or inside one
            if p.r_inner % R and R % p.r_inner:
                raise UnsupportedKernel(f"a {R}-row tile straddles the operand's runs of {p.r_inner} rows")
            b[1] = min(R, p.r_inner)
            b[3 if p.k_inner else 2] = max(1, R // p.r_inner)
        return b
    feeds = [(pa, 0, BM, "bm_"), (pb, A_BYTES, BN, "bn_")]
    maps: dict = {}
    w.tma = []
    for p, _, R, _ in feeds:
        if isinstance(p, TmaOperand):
            maps[id(p)] = len(w.tma)
            halved = cfg.get("mcast") and p is pb and p.kmajor  # (knob mcast: each of the pair copies half of b's rows)
            w.tma.append(launch_spec(p, params[p.buffer], box(p, R // 2 if halved else R), raw=x3 or tsplit))
            if isinstance(p, Im2colOperand):
                w.tma[-1]["im2col"] = im2col_entry(p, R, BK)
    # both copied: one producer thread, whose warpgroup gives its registers to the consumers (with one
    # block per SM: two blocks share the register file, and 85 per thread is all there is)
    # (tf32x3: every producer thread splits what TMA copied)
    single_thread = len(maps) == 2 and occupancy == 1 and not (x3 or tsplit)
    if single_thread and P > 1:
        raise UnsupportedKernel("a second producer warpgroup has nothing to gather (both operands copied by TMA)")
    w.smem_bytes = smem
    I = w.IDX
    w.emit(1, "extern __shared__ __align__(1024) unsigned char em_dyn_smem[];")
    split = (x3 or tsplit) and bool(maps)  # TMA tiles split by the producer: a third barrier per slot, `landed`
    lag = int(cfg.get("lag", max(0, stages - 2) if overlap else stages - 1))
    if split and not ring_staged and not 0 <= lag <= (stages - 2 if overlap else stages - 1):
        raise UnsupportedKernel(f"tf32x3 split lag {lag} with {stages} stages (overlapping consumers hold two slots)")
    nland = sdepth if ring_staged else stages if split else 0  # `landed` barriers (per staging slot)
    w.emit(1, f"__shared__ __align__(8) unsigned long long em_bar_[{2 * stages + nland}];")
    w.emit(1, "const em_u32 ring_ = ((em_u32)__cvta_generic_to_shared(em_dyn_smem) + 1023u) & ~1023u;")
    w.emit(1, "const em_u32 bars_ = (em_u32)__cvta_generic_to_shared(em_bar_);")
    _sizes(w, g, BM, BN)
    group = int(cfg.get("group", 0))
    w.emit(1, f"const int KT_ = (int)((K_ + {BK - 1}) / {BK});")
    slot_bytes = (A_BYTES + B_BYTES) * _copies(kind) - (A_BYTES if rs and x3 else 0) + srows * SWIZZLE_BYTES
    # knob `cluster`: the k loop split over a cluster of S blocks, summed through their shared memory
    S = kcluster_size(cfg, BM, BN, NC, stages * slot_bytes, {"persistent": cfg.get("persistent"), "pingpong": pingpong, "sown": sown,
                      "tf32x3": x3, "the staging ring": ring_staged, "the RS form": rs, "promote": promote, "occupancy 2": occupancy != 1})
    w.tk_split = S
    w.streamk = streamk_on(cfg, {"pingpong": pingpong, "cluster": S > 1, "the staging ring": ring_staged, "promote": promote,
                                 "occupancy 2": occupancy != 1})
    w.mcast = mcast_on(cfg, BN, pb, {"pingpong": pingpong, "cluster": S > 1, "streamk": w.streamk,
                                     "occupancy 2": occupancy != 1, "a gathered operand": len(maps) < 2,
                                     "an im2col copy": any(isinstance(p, Im2colOperand) for p in (pa, pb)), "tf32x3": x3 or tsplit, "the RS form": rs})
    G = w.target.sm_count if w.target is not None else 132
    if w.streamk:
        w.workspace = workspace_bytes(G, BM, BN)
    emit_k_range(w, S)
    if w.mcast:  # (knob mcast: b's tile shared by a pair of blocks, codegen/cuda_wgmma_mcast.py)
        emit_pair_sizes(w, g)
    w.emit(1, "if (threadIdx.x == 0) {")
    w.emit(2, f"for (int s = 0; s < {stages}; ++s) {{ em_mbar_init(bars_ + 8 * s, {full_count(feeds, P, split)}); "
              f"em_mbar_init(bars_ + 8 * ({stages} + s), {4 if pingpong else 4 * NC * (2 if w.mcast else 1)}); }}")
    if nland:
        w.emit(2, f"for (int s = 0; s < {nland}; ++s) em_mbar_init(bars_ + 8 * ({2 * stages} + s), 1);")
    w.emit(2, 'asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");')
    w.emit(1, "}")
    w.emit(1, "em_cluster_sync();" if w.mcast else "__syncthreads();")  # (mcast: the peer's barriers too)
    w.emit(1, "const int wg_ = threadIdx.x / 128;")
    # ---- producer
    w.emit(1, f"if (wg_ < {P}) {{")
    # (the RS form: without the split of registers ptxas serialises the consumers' wgmmas, C7520, where a
    # producer warpgroup works or one consumer runs)
    regs = (40, 232) if NC == 2 and single_thread else RS_REGS[NC] if P == 1 and rs else None
    if regs:
        w.emit(2, f'asm volatile("setmaxnreg.dec.sync.aligned.u32 {regs[0]};");')
    # (tf32x3: a slot is [a hi | b hi | a lo | b lo], lo tiles lo_off after their hi ones; RS: [a raw | b hi | b lo])
    lo_off = (B_BYTES if rs else A_BYTES + B_BYTES) if x3 else 0
    if ring_staged:
        emit_staged_producer(w, g, feeds, maps, stages, sdepth, BK, slot_bytes, group, _tile_origin, lo_off)
    else:
        # (codegen/cuda_wgmma_gather.py; default since measured: real KB 63 8.37 -> 7.95 ms, ResNet-50 bf16 2.85 -> 2.64 ms on an H200)
        hoist = bool(cfg.get("hoist", os.environ.get("EMBER_WGMMA_HOIST", "1") == "1"))
        emit_producer(w, g, feeds, maps, stages, BK, slot_bytes, group, _tile_origin, P, int(cfg.get("gunroll", 1)), lo_off, lag,
                      cpasync, hoist, frozenset({id(pa)} if rs and x3 else ()), S)
    emit_producer_syncs(w, S)
    # ---- consumers
    w.emit(1, "} else {")
    if regs:
        w.emit(2, f'asm volatile("setmaxnreg.inc.sync.aligned.u32 {regs[1]};");')
    w.emit(2, f"const int pp_ = wg_ - {P}, cw_ = 0, tid_ = threadIdx.x % 128;" if pingpong else
           f"const int cw_ = wg_ - {P}, tid_ = threadIdx.x % 128;")
    w.emit(2, f"float d_[{BN // 2}];")
    if promote:
        w.emit(2, f"float p_[{BN // 2}];  /* the folded sum (PROMOTE_SLICES) */")
    if rs:
        emit_rs_offsets(w, BK, overlap, 2, rs_kmajor(pa), x3)
    w.emit(2, "int kit_ = pp_ * KT_;" if pingpong else "int kit_ = 0;")  # (ping-pong: the slices of its own tiles)
    # the tile loop: with the grid capped at the SM count (`persistent`) a block walks several tiles,
    # and the producer fills the next tile's slots while the consumers run this one's epilogue
    w.emit(2, f"for ({I} tile_ = blockIdx.x + pp_ * gridDim.x; tile_ < ntiles_; tile_ += 2 * gridDim.x) {{" if pingpong else
           pair_loop(I) if w.mcast else tile_loop(I, S, w.streamk))
    _tile_origin(w, g, group, 2)
    w.emit(2, f"#pragma unroll\n    for (int i = 0; i < {BN // 2}; ++i) d_[i] = 0.f;")
    if pingpong:  # the other consumer's products of the tile before are done (its slots too: parity safe)
        w.emit(2, 'if (tile_ - blockIdx.x >= gridDim.x) asm volatile("bar.sync %0, 256;" :: "r"(5 + pp_) : "memory");')
    if promote:
        w.emit(2, f"#pragma unroll\n    for (int i = 0; i < {BN // 2}; ++i) p_[i] = 0.f;")
    w.emit(2, "for (int it = kb_; it < ke_; ++it, ++kit_) {")
    w.emit(3, f"const int s = kit_ % {stages}; const em_u32 ph = (kit_ / {stages}) & 1;")
    w.emit(3, "em_mbar_wait(bars_ + 8 * s, ph);")
    if cpasync:  # (the copies' generic-proxy writes, ordered before this thread's wgmma reads)
        w.emit(3, 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
    w.emit(3, f"const em_u32 sA_ = ring_ + s * {slot_bytes}, sB_ = sA_ + {A_BYTES};")
    if not rs:
        w.emit(3, "em_wg_fence();")
        w.emit(3, f"#pragma unroll\n      for (int kk = 0; kk < {BK // kstep}; ++kk) {{")
    # K-major: the consumer's 64 rows start 64 rows (8 KB) in, a k step is 32 bytes along the row;
    # MN-major: the consumer's rows are chunk cw_, a k step is kstep rows of 128 bytes
    da = "em_gdesc(sA_ + cw_ * 8192 + kk * 32, 16, 1024)" if ka else \
        f"em_gdesc(sA_ + cw_ * {BK * 128} + kk * {kstep * 128}, {BK * 128}, 1024)"
    db = "em_gdesc(sB_ + kk * 32, 16, 1024)" if kb else f"em_gdesc(sB_ + kk * {kstep * 128}, {BK * 128}, 1024)"
    # an im2col tile of narrow pixels: column blocks of the pixel's width (codegen/cuda_wgmma_im2col.py NARROW)
    if getattr(pa, "narrow", False):
        da = narrow_desc("sA_", BM, pa.width, "cw_", "kk")
    if getattr(pb, "narrow", False):
        db = narrow_desc("sB_", BN, pb.width, "0", "kk")
    if rs:
        emit_rs_slice(w, fname, BK, db, overlap, 3, rs_kmajor(pa), lo_off)
    else:
        if x3:  # small terms first: lo*hi + hi*lo, then hi*hi (the lo tiles lo_off bytes after the hi ones)
            w.emit(4, f"{fname}(d_, {da.replace('sA_', f'sA_ + {lo_off}')}, {db});")
            w.emit(4, f"{fname}(d_, {da}, {db.replace('sB_', f'sB_ + {lo_off}')});")
        w.emit(4, f"{fname}(d_, {da}, {db});")
        w.emit(3, "}")
    w.emit(3, "em_wg_commit();")
    release = f"if ((tid_ & 31) == 0) em_mbar_arrive{'_pair' if w.mcast else ''}(bars_ + 8 * ({stages} + "
    if overlap:  # the previous slice's group is done: release its slot, keep this one queued
        w.emit(3, "em_wg_wait1();")
        w.emit(3, f"if (it > kb_) {{ {release}(kit_ + {stages - 1}) % {stages})); }}")
    else:
        w.emit(3, "em_wg_wait0();")
        w.emit(3, f"{release}s));")
    fold = f"#pragma unroll\n      for (int i = 0; i < {BN // 2}; ++i) {{ p_[i] += d_[i]; d_[i] = 0.f; }}"
    if promote:  # every `promote` slices the window's sum is folded (rounded to nearest) and restarted
        w.emit(3, f"if ((it + 1) % {promote} == 0) {{")
        if overlap:
            w.emit(4, "em_wg_wait0();")
        w.emit(4, fold)
        w.emit(3, "}")
    w.emit(2, "}")
    if overlap:  # the tile's last slice: done, and its slot released for the next tile's loads
        w.emit(2, "em_wg_wait0();")
        w.emit(2, f"{release}(kit_ + {stages - 1}) % {stages}));")
    if pingpong:  # this tile's products done: the other consumer's next tile may start its products
        w.emit(2, 'if (tile_ + gridDim.x < ntiles_) asm volatile("bar.arrive %0, 256;" :: "r"(6 - pp_) : "memory");')
    if promote:  # the last window: the total back in d_ for the epilogue
        w.emit(2, f"#pragma unroll\n    for (int i = 0; i < {BN // 2}; ++i) d_[i] += p_[i];")
    # ---- epilogue (codegen/cuda_wgmma_epilogue.py)
    pair = bool(cfg.get("pair", True)) and pairable(w, c, g)
    wide = wide_lanes(w, c, g, cfg)  # (the 16-byte walk stages the tile unless `sepi` says no)
    if w.streamk:  # (a contributor's partial to the workspace; an owner's contributors' partials added)
        emit_fixup(w, BM, BN, NC)
    if S > 1:
        emit_cluster_epilogue(w, c, g, BM, BN, NC, S, pair, sum_unroll(cfg, BM, BN, NC, S))
    elif staged_epilogue(cfg, BM, BN, stages * slot_bytes, unpaired_columns(c, g, pair) or bool(wide)):
        emit_staged_epilogue(w, c, g, BM, BN, pair, wide, own=stages * slot_bytes if sown else None, half=half)
    else:
        emit_register_epilogue(w, c, g, BM, BN, pair)
    if pingpong:  # the other consumer's tile's slices come next in the ring
        w.emit(2, "kit_ += KT_;")
    w.emit(2, "}")
    w.emit(1, "}")
    if w.mcast:  # (no block leaves while its pair may still copy into it or arrive on its barriers)
        w.emit(1, "em_cluster_sync();")
        return pair_grid(g, BM, BN, (G // 2) * 2 if cfg.get("persistent", False) else None)
    tiles = w.tile_grid(g, BM, BN)
    if w.streamk:  # (every SM's block: the slices are dealt out whatever the tile count)
        return G
    if cfg.get("persistent", False):  # one block per SM, each walking tiles
        return sm.minimum(tiles, G)
    return tiles * S
