"""tf32x3 with a staging ring: the wgmma mode's producer for float32 at float32 accuracy where every
operand is copied by TMA (codegen/cuda_wgmma.py, knob `staged`).

In the plain tf32x3 producer (codegen/cuda_wgmma_feed.py) a copy lands in the slot the consumers
read (K-major: split in place) or in a staging tile inside that slot (MN-major: transposed), so a
copy can only start when the consumers have released the slot: with the ring holding hi, lo and
staging tiles, a 128 x 128 tile has 2 slots, the consumers hold both, and every copy's latency is
exposed (x.T @ g at 49 TFLOP/s against 67 in `mma.sync`).

Here the copies land in a ring of their own, `sdepth` staging slots after the hi/lo ring, and run up
to `sdepth` slices ahead of the split, whatever the consumers hold. Per slice q the producer's 128
threads wait for ring slot q % stages to be released (`empty`) and for staging slot q % sdepth to
have landed (`landed`), write the hi and lo tiles (a chunk copy for a K-major operand, a transpose
for an MN-major one: codegen/cuda_wgmma_feed.py `split_tile`), fence into the async proxy, arrive
on `full`, and meet at a named barrier (`bar.sync 1, 128`) so that no thread still reads the
staging slot when thread 0 issues the copy that refills it.
"""
from __future__ import annotations

from .cuda_tma import SWIZZLE_BYTES
from .cuda_wgmma_feed import _emit_tma, split_tile


def staged_bytes(rows: int, stages: int, sdepth: int, copies: int = 2) -> int:
    """Shared memory of a staged block: the ring (tf32x3: hi and lo tiles, copies 2; plain TF32 1) and
    the staging ring (rows: BM + BN)."""
    return (stages * copies + sdepth) * rows * SWIZZLE_BYTES + 1024  # (+ slack to align to 1024 bytes)


def emit_staged_producer(w, g, feeds: list, maps: dict, stages: int, sdepth: int, BK: int, slot_bytes: int,
                         group: int, tile_origin, lo_off: int) -> None:
    """feeds: [(TmaOperand, offset of its hi tile in a ring slot, rows per tile, origin variable)]."""
    I = w.IDX
    stage0 = stages * slot_bytes  # the staging ring follows the hi/lo ring
    sbytes = sum(R * SWIZZLE_BYTES for _, _, R, _ in feeds)
    soff, at = {}, 0
    for p, _, R, _ in feeds:
        soff[id(p)] = at
        at += R * SWIZZLE_BYTES
    w.emit(2, "const int pt_ = threadIdx.x;")
    w.emit(2, "if (pt_ < 128) {")
    for p, _, _, _ in feeds:
        w.emit(3, f"const unsigned char* map{maps[id(p)]}_ = em_tma_ + {128 * maps[id(p)]};")
        w.emit(3, f"if (pt_ == 0) em_tma_acquire(map{maps[id(p)]}_);")
    w.emit(3, "int kit_ = 0, ksp_ = 0;  // slices copied, slices split (over all of this block's tiles)")
    w.emit(3, f"for ({I} tile_ = blockIdx.x; tile_ < ntiles_; tile_ += gridDim.x) {{")
    tile_origin(w, g, group, 4)
    w.emit(4, "for (int it = 0; it < KT_; ++it, ++kit_) {")
    w.emit(5, f"if (kit_ - ksp_ >= {sdepth}) {{  // the staging slot to refill is split first")
    _emit_split(w, feeds, stages, sdepth, slot_bytes, stage0, sbytes, soff, lo_off, BK, 6)
    w.emit(5, "}")
    w.emit(5, "if (pt_ == 0) {")
    w.emit(6, f"const int ss_ = kit_ % {sdepth};")
    w.emit(6, f"const em_u32 landed_ = bars_ + 8 * ({2 * stages} + ss_), stg_ = ring_ + {stage0} + ss_ * {sbytes};")
    w.emit(6, f"em_mbar_expect_tx(landed_, {sbytes});")
    for p, _, R, origin in feeds:
        _emit_tma(w, p, f"stg_ + {soff[id(p)]}", f"map{maps[id(p)]}_", R, origin, BK, 6, "landed_")
    w.emit(5, "}")
    w.emit(4, "}")
    w.emit(3, "}")
    w.emit(3, "while (ksp_ < kit_) {")
    _emit_split(w, feeds, stages, sdepth, slot_bytes, stage0, sbytes, soff, lo_off, BK, 4)
    w.emit(3, "}")
    w.emit(2, "}")


def _emit_split(w, feeds, stages, sdepth, slot_bytes, stage0, sbytes, soff, lo_off, BK, ind) -> None:
    w.emit(ind, f"const int s2_ = ksp_ % {stages}, ss2_ = ksp_ % {sdepth};")
    w.emit(ind, f"em_mbar_wait(bars_ + 8 * ({stages} + s2_), ((ksp_ / {stages}) & 1) ^ 1);  // slot released")
    w.emit(ind, f"em_mbar_wait(bars_ + 8 * ({2 * stages} + ss2_), (ksp_ / {sdepth}) & 1);  // copy landed")
    w.emit(ind, f"const em_u32 sl_ = ring_ + s2_ * {slot_bytes}, st_ = ring_ + {stage0} + ss2_ * {sbytes};")
    for p, off, R, _ in feeds:
        split_tile(w, p, f"sl_ + {off}", f"st_ + {soff[id(p)]}", R, lo_off, 128, ind, BK)
    w.emit(ind, 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
    w.emit(ind, "em_mbar_arrive(bars_ + 8 * s2_);")
    w.emit(ind, 'asm volatile("bar.sync 1, 128;" ::: "memory");  // staging slot read by all before its refill')
    w.emit(ind, "++ksp_;")
