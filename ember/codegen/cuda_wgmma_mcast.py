"""Knob `mcast` of the wgmma mode: two blocks of a thread-block cluster on vertically adjacent tiles (the same column
tile, row tiles 2q and 2q + 1) share b's tile — each copies half of it by TMA multicast into both blocks' shared memory
— so b's bytes cross from L2 once for two tiles.

Why: a tile's operands stream from L2 at every k slice. With 128 x 256 tiles a block reads (128 + 256) x 128 bytes a
slice; at 4096³ that is 1.6 GB of L2 reads for 137 GFLOP, and the mid-size GEMMs' tiles (a 512-token prefill's up
projection: 128 tiles, 198 MB in ~30 us) run near what L2 delivers. Sharing b over the pair cuts the reads by a third
(CUTLASS and cuBLAS run clusters of 2 with multicast on Hopper; bf16 4096³ / 8192³ are at 92% / 94% of cuBLAS
without it, bench/results/gpu-session49-2026-11-29/a/).

How: `__cluster_dims__(2, 1, 1)`; block rank r of pair q takes the pair tiles' row tile 2 q' + r (an odd last row tile
leaves rank 1 a tile past the rows: it still copies its half of b — TMA zero-fills its own a — and stores nothing).
Each slice, rank r's producer waits on its `empty` barrier — which now counts both blocks' consumer warps, so no half of
b lands in a slot the peer still reads — expects a's and the whole b's bytes on its `full` barrier, copies its a and
rows [r BN / 2, (r + 1) BN / 2) of b (K-major: a tensor map of BN / 2-row boxes; MN-major: half of the 128-byte column
chunks) with `.multicast::cluster` to both blocks: the copy lands at the same offset in each and completes bytes on
each block's barrier at the same offset (the peer's bytes may arrive before this block's producer expects them: an
mbarrier's tx-count may go below zero until then). Consumers release a slot on both blocks' `empty` barriers (the
peer's by `mapa` + a cluster-scope release arrive). The barriers are initialised before a cluster barrier, and the
kernel ends on one (no block leaves while the other may still copy into it or arrive on its barriers).

Persistent (the pairs walk the pair tiles, the grid capped at the SMs; so with `sown` / `shalf` too) or not. Not with
`pingpong`, `cluster`, `streamk`, two blocks per SM, gathered or im2col operands, tf32x3's split or the RS form. Built in the forty-ninth session after its device time ran out:
searched (codegen/cuda_wgmma_space.py), compiled with NVRTC in CI, CUDA tests in tests/test_wgmma_mcast.py; untimed.
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel.structure import UnsupportedKernel, _size

MCAST_HELPERS = r"""#ifndef EM_MCAST_HELPERS
#define EM_MCAST_HELPERS
// this block's arrival on its own barrier and on the same barrier of the cluster's other block (knob mcast)
__device__ __forceinline__ void em_mbar_arrive_pair(em_u32 bar) {
  em_u32 rank, peer;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer) : "r"(bar), "r"(rank ^ 1u));
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(peer) : "memory");
}
__device__ __forceinline__ void em_tma2_mc(em_u32 dst, const void* map, em_u32 bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
               :: "r"(dst), "l"((em_u64)map), "r"(c0), "r"(c1), "r"(bar), "h"((unsigned short)3) : "memory");
}
__device__ __forceinline__ void em_tma3_mc(em_u32 dst, const void* map, em_u32 bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;"
               :: "r"(dst), "l"((em_u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"((unsigned short)3) : "memory");
}
__device__ __forceinline__ void em_tma4_mc(em_u32 dst, const void* map, em_u32 bar, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], %7;"
               :: "r"(dst), "l"((em_u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "h"((unsigned short)3) : "memory");
}
__device__ __forceinline__ void em_tma5_mc(em_u32 dst, const void* map, em_u32 bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4, %5, %6}], [%7], %8;"
               :: "r"(dst), "l"((em_u64)map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar), "h"((unsigned short)3) : "memory");
}
#endif
"""


def mcast_on(cfg: dict, BN: int, pb, excluded: dict) -> bool:
    """Whether knob `mcast` is set; raises where it does not apply. pb: b's operand (a TMA copy, its tile halves whole
    swizzle groups: K-major BN / 2 rows a multiple of 8, MN-major an even count of 128-byte chunks)."""
    if not cfg.get("mcast"):
        return False
    on = [name for name, v in excluded.items() if v]
    if on:
        raise UnsupportedKernel(f"wgmma b multicast over a cluster of 2 with {', '.join(on)}")
    if pb.r_inner or pb.k_inner:
        raise UnsupportedKernel("wgmma b multicast over b's rows or k as two runs")
    if pb.kmajor and (BN // 2) % 8:
        raise UnsupportedKernel(f"wgmma b multicast: a {BN}-row b tile does not halve into 8-row groups")
    if not pb.kmajor and (BN * pb.dtype.itemsize // 128) % 2:
        raise UnsupportedKernel(f"wgmma b multicast: a {BN}-column MN-major b tile is an odd count of 128-byte chunks")
    return True


def emit_pair_sizes(w, g) -> None:
    """The pair tiles (row tiles in twos) and this block's rank in its pair."""
    I = w.IDX
    w.emit(1, f"const {I} mt2_ = (mt_ + 1) / 2, ntiles2_ = mt2_ * nt_ * {w.idx(_size(g.batch))};")
    w.emit(1, "const int mr_ = (int)em_cluster_rank();")


def pair_loop(I: str) -> str:
    return f"for ({I} tile_ = blockIdx.x / 2; tile_ < ntiles2_; tile_ += gridDim.x / 2) {{"


def pair_grid(g, BM: int, BN: int, cap: int | None = None):
    """Two blocks a pair tile; `persistent`: at most `cap` (the SMs, even), the pairs walking pair tiles."""
    M, N, B = _size(g.m), _size(g.n), _size(g.batch)
    return sm.minimum(((M + (BM - 1)) // BM + 1) // 2 * ((N + (BN - 1)) // BN) * B * 2, cap or 2 ** 31 - 1)
