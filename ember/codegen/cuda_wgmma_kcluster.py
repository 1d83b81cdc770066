"""Knob `cluster` of the wgmma mode: the k loop split over a thread-block cluster of S blocks, their partial tiles
summed through distributed shared memory — split-K without partials in global memory or a second kernel.

Why: a GEMM with few output tiles (a 512-token prefill's projections: 64-96 tiles of 128 x 128 on 132 SMs, 59-65% of
cuBLAS in bench/results/gpu-session48-2026-11-29/e/) leaves SMs idle, and the graph-level split-K (kernel/split.py)
writes S float32 partial tiles to memory and sums them in a second kernel: the Llama-1B prefill's down projection
(512 x 2048 over k 8192, split in 8) moved 64 MB of partials for 8.4 MB of output (48.8 us, cuBLAS 29.0).

How: block `rank` of each cluster of S (consecutive blockIdx.x, `__cluster_dims__(S, 1, 1)`) computes the same output
tile over k slices [KT * rank / S, KT * (rank + 1) / S). After its k loop each consumer warpgroup stages its float32
accumulators in the ring (free: the tile is not persistent), the cluster synchronises, and rank r sums rows
[r * BM / S, (r + 1) * BM / S) of the tile over every rank's staging (`ld.shared::cluster.v4.f32`: its own rows only,
so no two ranks write the same bytes), the cluster synchronises again (no block leaves while another reads its shared
memory), and each rank walks its own rows through the kernel's epilogue: the S ranks store a tile together (a plain
cast to a 16-bit output stores each 4 sums as they are made, 8 bytes a lane, without the walk: direct_store). Every
output is summed by one block in a fixed order: deterministic. The producer warpgroup joins both cluster barriers.

Not with `persistent` (the ring must be free after the k loop), `pingpong`, `sown`, tf32x3, the RS form, the staging
ring, accumulator folds (`promote`) or two blocks per SM. Built in the forty-eighth session after its device time ran
out: searched (codegen/cuda_wgmma_space.py: S = 2, 4 where the tiles are fewer than SMs), compiled with NVRTC in CI; its
CUDA tests passed on an H200 in the forty-ninth, which made S = 2 over tiles at most 128 wide a default by cost
(cuda_wgmma_default.py, KCLUSTER_DEFAULT_SIZES: the prefill's down 49.1 -> 36.2 us).
"""
from __future__ import annotations

import os

from ..kernel.structure import Canon, UnsupportedKernel
from .clike import _lanes_contiguous
from .cuda_wgmma_epilogue import PAD, _emit_fragments, emit_pair_walk, plain_cast
from .cuda_wgmma_streamk import emit_segment_range, segment_loop

KCLUSTER_SIZES = (2, 4)


def kcluster_default_on() -> bool:
    """The default wgmma tile is chosen over (tile, S) pairs (cuda_wgmma_default.KCLUSTER_DEFAULT_SIZES);
    EMBER_WGMMA_KCLUSTER=0: off. Read at each call (bench/short_k_ab.py --envs flips it in one process)."""
    return os.environ.get("EMBER_WGMMA_KCLUSTER", "1") == "1"


KCLUSTER_MIN_SLICES = 8  # k slices each block of the cluster at least runs (the sum through shared memory is per tile)


def ring_holds_tile(BM: int, BN: int, ring_bytes: int) -> bool:
    """Whether the ring holds the float32 tile the cluster sums (each consumer's 64 rows of BN + PAD floats)."""
    return (BM // 64) * 64 * (BN + PAD) * 4 <= ring_bytes


def kcluster_size(cfg: dict, BM: int, BN: int, NC: int, ring_bytes: int, excluded: dict) -> int:
    """S, the blocks the k loop is split over (1: knob off); raises where the knob does not apply. excluded: the
    incompatible knobs in force, by name."""
    S = int(cfg.get("cluster", 1))
    if S == 1:
        return 1
    if S not in KCLUSTER_SIZES:
        raise UnsupportedKernel(f"wgmma k split over a cluster of {S} blocks ({' or '.join(map(str, KCLUSTER_SIZES))})")
    on = [name for name, v in excluded.items() if v]
    if on:
        raise UnsupportedKernel(f"wgmma k split over a cluster with {', '.join(on)}")
    if not ring_holds_tile(BM, BN, ring_bytes):
        raise UnsupportedKernel(f"wgmma k split over a cluster: a {BM}x{BN} float32 tile does not fit in the ring "
                                f"({ring_bytes} bytes)")
    return S


def emit_k_range(w, S: int) -> None:
    """kb_, ke_: this block's k slices (all of them without the knob); stream-K: its range of (tile, slice) pairs,
    kb_ and ke_ set per segment by the loop (codegen/cuda_wgmma_streamk.py)."""
    if getattr(w, "streamk", False):
        emit_segment_range(w)
        return
    if S == 1:
        w.emit(1, "const int kb_ = 0, ke_ = KT_;")
        return
    w.emit(1, "const int kr_ = (int)em_cluster_rank();")
    w.emit(1, f"const int kb_ = (int)(((long long)KT_ * kr_) / {S}), ke_ = (int)(((long long)KT_ * (kr_ + 1)) / {S});")


def tile_loop(I: str, S: int, streamk: bool = False) -> str:
    """The header of a block's loop over its tiles: a cluster of S blocks shares one tile; stream-K: its segments."""
    if streamk:
        return segment_loop(I)
    if S == 1:
        return f"for ({I} tile_ = blockIdx.x; tile_ < ntiles_; tile_ += gridDim.x) {{"
    return f"for ({I} tile_ = blockIdx.x / {S}; tile_ < ntiles_; tile_ += gridDim.x / {S}) {{"


def emit_producer_syncs(w, S: int) -> None:
    """The producer warpgroup's part in the epilogue's two cluster barriers (every thread of the cluster arrives)."""
    if S > 1:
        w.emit(2, "em_cluster_sync();  // (the tile staged in every rank)")
        w.emit(2, "em_cluster_sync();  // (every rank's rows summed)")


def sum_unroll(cfg: dict, BM: int, BN: int, NC: int, S: int) -> int:
    """Knob `cunroll`: each thread's float4 runs of the cluster's sum loaded U at a time (every rank's U loads in flight
    before the first add) — one remote load a run in flight at a time waits its distributed-shared-memory latency once
    a run (128 x 256 over 2 blocks: 16 runs a thread). U divides the runs a thread sums (rows x BN / 4 / threads)."""
    U = int(cfg.get("cunroll", 1))
    runs = (BM // S) * BN // 4 // (128 * NC)
    if U < 1 or runs % U:
        raise UnsupportedKernel(f"wgmma cluster sum unrolled {U} times over {runs} runs a thread (a divisor of it)")
    return U


def emit_cluster_epilogue(w, c: Canon, g, BM: int, BN: int, NC: int, S: int, pair: bool, U: int = 1) -> None:
    """Stage, sum this rank's rows over the cluster, store them through the epilogue (see the module docstring);
    U: the runs a thread loads before summing (sum_unroll)."""
    P, T = BN + PAD, 128 * NC
    rows = BM // S
    # (every consumer past its k loop before any stages: the staging overwrites slots another may still be reading)
    w.emit(2, f'asm volatile("bar.sync 2, {T};" ::: "memory");')
    w.emit(2, "float* const st_ = reinterpret_cast<float*>(em_dyn_smem + (ring_ - (em_u32)__cvta_generic_to_shared(em_dyn_smem)));")
    w.emit(2, f"float* const se_ = st_ + cw_ * {64 * P};")
    _emit_fragments(w, BN, P, "float2", "se_", "make_float2({a}, {b})")
    w.emit(2, "em_cluster_sync();")
    w.emit(2, f"const int ct_ = cw_ * 128 + tid_, r0_ = kr_ * {rows};")
    n4 = rows * BN // 4

    def at(i: str) -> str:
        return f"(r0_ + ({i}) / {BN // 4}) * {P} + 4 * (({i}) % {BN // 4})"

    def remote(dst: str, i: str, q: int) -> str:
        return ('asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : '
                f'"=f"({dst}.x), "=f"({dst}.y), "=f"({dst}.z), "=f"({dst}.w) : '
                f'"r"(em_cluster_addr(&st_[{at(i)}], (unsigned)((kr_ + {q}) % {S}))) : "memory");')
    if U == 1:
        w.emit(2, f"for (int i_ = ct_; i_ < {n4}; i_ += {T}) {{")
        w.emit(3, f"const int at_ = {at('i_')};")
        w.emit(3, "float4 v_ = *reinterpret_cast<const float4*>(&st_[at_]);")
        for q in range(1, S):  # (the other ranks in a fixed order from this one: each output summed by one block)
            w.emit(3, "{")
            w.emit(4, "float4 u_;")
            w.emit(4, remote("u_", "i_", q))
            w.emit(4, "v_.x += u_.x; v_.y += u_.y; v_.z += u_.z; v_.w += u_.w;")
            w.emit(3, "}")
    else:  # (U runs' loads, local and remote, issued before any sum: their latencies overlap; same order of adds)
        w.emit(2, f"for (int j_ = ct_; j_ < {n4}; j_ += {U * T}) {{")
        w.emit(3, f"float4 lv_[{U}], ru_[{U}][{S - 1}];")
        w.emit(3, f"#pragma unroll\n      for (int u = 0; u < {U}; ++u) {{")
        w.emit(4, f"lv_[u] = *reinterpret_cast<const float4*>(&st_[{at(f'j_ + u * {T}')}]);")
        for q in range(1, S):
            w.emit(4, remote(f"ru_[u][{q - 1}]", f"j_ + u * {T}", q))
        w.emit(3, "}")
        w.emit(3, f"#pragma unroll\n      for (int u = 0; u < {U}; ++u) {{")
        w.emit(3, f"const int i_ = j_ + u * {T}, at_ = {at('i_')};")
        w.emit(3, "float4 v_ = lv_[u];")
        for q in range(1, S):
            w.emit(3, f"v_.x += ru_[u][{q - 1}].x; v_.y += ru_[u][{q - 1}].y; v_.z += ru_[u][{q - 1}].z; v_.w += ru_[u][{q - 1}].w;")
    direct = direct_store(w, c, g)
    if direct:  # (a plain cast to 16 bits: the 4 sums rounded and stored at once, 8 bytes a lane)
        narrow = "em_f2h" if w.k.buffer(c.store.buffer).dtype.name == "float16" else "em_f2bf"
        w.emit(3, f"const {w.IDX} gm_ = bm_ * {BM} + r0_ + i_ / {BN // 4}, gn_ = bn_ * {BN} + 4 * (i_ % {BN // 4});")
        w.emit(3, "if (gm_ < M_ && gn_ < N_) {")  # (N_ a multiple of 4: a run is all in or all out)
        w.decompose("gm_", g.m, 4)
        w.decompose("gn_", g.n, 4)
        w.emit(4, f"*reinterpret_cast<uint2*>(&{c.store.buffer}[{w.idx(c.store.index)}]) = make_uint2("
                  f"(unsigned){narrow}(v_.x) | ((unsigned){narrow}(v_.y) << 16), (unsigned){narrow}(v_.z) | ((unsigned){narrow}(v_.w) << 16));")
        w.emit(3, "}")
    else:
        w.emit(3, "*reinterpret_cast<float4*>(&st_[at_]) = v_;")
    if U > 1:
        w.emit(3, "}")
    w.emit(2, "}")
    w.emit(2, "em_cluster_sync();")
    if not direct:
        emit_pair_walk(w, c, g, BM, BN, pair, "ct_", rows, T, "r0_", f"(st_ + r0_ * {P})")


def direct_store(w, c: Canon, g) -> bool:
    """Whether the summed rows store straight from the sum: the accumulator cast to the 16-bit output, contiguous along
    whole runs of 4 columns (else they go back to the staging and through the epilogue's walk)."""
    buf = w.k.buffer(c.store.buffer)
    var, ext = g.n[-1]
    return (plain_cast(c, g) and c.store.value.dtype == buf.dtype and buf.dtype.itemsize == 2 and buf.dtype.is_float
            and ext.is_const and ext.value % 4 == 0 and _lanes_contiguous(c.store.index, var, 4))
