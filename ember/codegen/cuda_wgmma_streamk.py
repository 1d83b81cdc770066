"""Knob `streamk` of the wgmma mode: the k slices of all tiles dealt out evenly to one block per SM (stream-K), a tile
split between blocks summed through a workspace in global memory.

Why: a GEMM with fewer tiles than SMs, or a last wave a fraction full, leaves SMs idle however its tile is shaped —
the Llama-1B prefill's qkv (512 x 3072 x 2048: 96 tiles of 128 x 128 on 132 SMs) runs at 64% of cuBLAS, its up
projection (128 tiles of 128 x 256) 82%, a ragged 1031 x 3080 x 2056 (117 tiles) 64%
(bench/results/gpu-session49-2026-11-29/c/, j/). The cluster split (codegen/cuda_wgmma_kcluster.py) divides each tile
by a fixed S; stream-K divides the whole iteration space (tiles x k slices) by the SMs, so every block runs the same
number of slices whatever the tile count.

How: block b of G (the grid, the target's SM count) runs iterations [I b / G, I (b + 1) / G) of the I = tiles x KT
(tile, k slice) pairs in order, as segments: one per tile it touches, k slices [kb_, ke_) of that tile, the producer
and the consumers walking the same segments (the ring's position runs on across them, as in a persistent loop). A
segment that starts a tile (kb_ 0) and ends it is a whole tile: the ordinary epilogue. A block's first segment may
start inside a tile (kb_ > 0): it is a *contributor* — the block before it in order computes that tile's first slices
at the end of its own range. A contributor writes its float32 accumulators to its own slot of the workspace (slot b:
BM x BN floats, in the fragment layout, 16 bytes a thread), fences, and raises flag b; it stores nothing. The segment
with kb_ 0 that does not reach KT_ *owns* its tile: after its k loop (the last of its range, so the contributors —
later blocks, each on its first segment — are long done) it waits for the flags of blocks b + 1 .. c, the block that
holds the tile's last slice, adds their slots in that order (deterministic), lowers each flag again (so the next
launch finds them zero: the workspace is zeroed once, at upload) and runs the epilogue. Only the first segment of a
block can be a contributor, so one slot a block suffices; an owner waits only on later blocks, which never wait: no
deadlock with G blocks resident (one per SM: the grid is the SM count).

Not with `pingpong`, `cluster`, the tf32x3 staging ring (its producer has a tile loop of its own), accumulator folds
(`promote`) or two blocks per SM. Built in the forty-ninth session after its device time ran out: searched
(codegen/cuda_wgmma_space.py), compiled with NVRTC in CI, CUDA tests in tests/test_wgmma_streamk.py; untimed.
"""
from __future__ import annotations

from ..kernel.structure import UnsupportedKernel

FLAG_BYTES = 4  # one unsigned flag a block, after the slots


def streamk_on(cfg: dict, excluded: dict) -> bool:
    """Whether knob `streamk` is set; raises where it does not apply. excluded: the incompatible knobs in force."""
    if not cfg.get("streamk"):
        return False
    on = [name for name, v in excluded.items() if v]
    if on:
        raise UnsupportedKernel(f"wgmma stream-K with {', '.join(on)}")
    return True


def workspace_bytes(G: int, BM: int, BN: int) -> int:
    """G slots of a BM x BN float32 tile, then G flags."""
    return G * BM * BN * 4 + G * FLAG_BYTES


def emit_segment_range(w) -> None:
    """This block's iterations [sk_s_, sk_e_) of the ntiles_ x KT_ (tile, k slice) pairs."""
    w.emit(1, "const long long sk_i_ = (long long)ntiles_ * KT_;")
    w.emit(1, "const long long sk_s_ = sk_i_ * blockIdx.x / gridDim.x, sk_e_ = sk_i_ * (blockIdx.x + 1) / gridDim.x;")


def segment_loop(I: str) -> str:
    """The header of a block's loop over its segments: tile_, and its slices kb_..ke_ this block runs."""
    return (f"for (long long sk_it_ = sk_s_; sk_it_ < sk_e_; ) {{ const {I} tile_ = ({I})(sk_it_ / KT_); "
            "const int kb_ = (int)(sk_it_ % KT_), ke_ = (int)(KT_ - kb_ < sk_e_ - sk_it_ ? KT_ : kb_ + (sk_e_ - sk_it_)); "
            "sk_it_ += ke_ - kb_;")


def emit_fixup(w, BM: int, BN: int, NC: int) -> None:
    """After a segment's k loop, in the consumers: a contributor's partial to its slot (and `continue`), an owner's
    contributors' partials added (see the module docstring)."""
    T, n4 = 128 * NC, BN // 8  # (consumer threads; float4 runs of a thread's BN / 2 accumulators)
    slot = BM * BN
    w.emit(2, f"float* const sk_ws_ = em_ws_;  unsigned* const sk_flag_ = reinterpret_cast<unsigned*>(em_ws_ + "
              f"(size_t)gridDim.x * {slot});")
    w.emit(2, "if (kb_ > 0) {  // a contributor: this tile's first slices are another block's")
    w.emit(3, f"float4* const p_ = reinterpret_cast<float4*>(sk_ws_ + (size_t)blockIdx.x * {slot} + cw_ * {64 * BN});")
    w.emit(3, f"#pragma unroll\n      for (int j = 0; j < {n4}; ++j) p_[j * 128 + tid_] = "
              "make_float4(d_[4 * j], d_[4 * j + 1], d_[4 * j + 2], d_[4 * j + 3]);")
    w.emit(3, "__threadfence();")
    w.emit(3, f'asm volatile("bar.sync 2, {T};" ::: "memory");')
    w.emit(3, 'if (cw_ == 0 && tid_ == 0) asm volatile("st.release.gpu.global.u32 [%0], 1;" :: '
              '"l"(sk_flag_ + blockIdx.x) : "memory");')
    w.emit(3, "continue;")
    w.emit(2, "}")
    w.emit(2, "if (ke_ < KT_) {  // the owner: blocks blockIdx.x + 1 .. the one holding the tile's last slice")
    w.emit(3, "const long long sk_x_ = (long long)tile_ * KT_ + KT_ - 1;")
    w.emit(3, "const int sk_c_ = (int)(((sk_x_ + 1) * gridDim.x + sk_i_ - 1) / sk_i_ - 1);")
    w.emit(3, "for (int c_ = blockIdx.x + 1; c_ <= sk_c_; ++c_) {")
    w.emit(4, "if (sk_i_ * c_ / gridDim.x == sk_i_ * (c_ + 1) / gridDim.x) continue;  // (no slices: fewer than blocks)")
    w.emit(4, "unsigned f_;")
    w.emit(4, 'for (;;) { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f_) : "l"(sk_flag_ + c_) : "memory"); '
              "if (f_) break; __nanosleep(32); }")
    w.emit(4, f"const float4* const p_ = reinterpret_cast<const float4*>(sk_ws_ + (size_t)c_ * {slot} + cw_ * {64 * BN});")
    w.emit(4, f"#pragma unroll\n        for (int j = 0; j < {n4}; ++j) {{ const float4 v_ = p_[j * 128 + tid_]; "
              "d_[4 * j] += v_.x; d_[4 * j + 1] += v_.y; d_[4 * j + 2] += v_.z; d_[4 * j + 3] += v_.w; }")
    w.emit(4, f'asm volatile("bar.sync 2, {T};" ::: "memory");  // (every thread past its wait: the flag may fall)')
    w.emit(4, "if (cw_ == 0 && tid_ == 0) sk_flag_[c_] = 0u;")
    w.emit(3, "}")
    w.emit(2, "}")


def segments(tiles: int, KT: int, G: int) -> list:
    """[(block, tile, kb, ke)] as the kernel walks them (the tests check owners and contributors against it)."""
    total, out = tiles * KT, []
    for b in range(G):
        it, end = total * b // G, total * (b + 1) // G
        while it < end:
            tile, kb = divmod(it, KT)
            ke = KT if KT - kb < end - it else kb + (end - it)
            out.append((b, tile, kb, ke))
            it += ke - kb
    return out


def last_block(tile: int, KT: int, tiles: int, G: int) -> int:
    """The block holding the tile's last slice, as the kernel computes it."""
    total, x = tiles * KT, tile * KT + KT - 1
    return ((x + 1) * G + total - 1) // total - 1
