"""The wgmma producer's whole-chunk gather with its index arithmetic hoisted (knob `hoist`).

The plain vector gather (codegen/cuda_wgmma_feed.py) recomputes, for every 16-byte chunk of every k
slice, where the chunk's row and k lie: the flat chunk number split into a row and a chunk column,
the row split into its loop variables (a conv's image, output row and column: two divisions), the k
offset split into its own (filter tap and channel: two or three more), then the guard and the
address. For a 3x3 conv that is ~80 instructions a chunk, 16 chunks a thread a slice: the producer
warpgroup issues more instructions per slice than the consumers' wgmmas take cycles (KernelBench
14's TF32 conv ran at 0.53x cuDNN, none of its tiles better than 0.60x).

Where the producer threads divide the tile's rows (R % threads == 0), each thread owns the same
R / threads rows in every slice of a tile: their loop variables are split once per tile into a small
table (registers), and per slice each of the BK / EPC chunk columns splits its k offset once, shared
by the thread's rows. A chunk then costs its guard, its address and its load.

Like the plain gather, loads are issued in one batch (every chunk of the thread's slice) before any
store; with `cpasync` (codegen/cuda_wgmma_feed.py, CPASYNC_HELPER) they are asynchronous copies.
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel.structure import Contraction
from .cuda_tma import SWIZZLE_BYTES


def hoistable(p, R: int, threads: int) -> bool:
    """Whether operand p's R-row tile can be gathered with its row arithmetic hoisted."""
    return getattr(p, "vector", None) is not None and R % threads == 0


def emit_row_table(w, p, i: int, R: int, origin: str, threads: int, ind: int) -> None:
    """Once per tile: the loop variables of this thread's rows of operand i (pt_ + j * threads) and
    whether each row exists (the last tile's rows past the extent)."""
    I, RPT = w.IDX, R // threads
    for v, _ in p.rows:
        w.emit(ind, f"{I} hr{i}_{v}[{RPT}];")
    w.emit(ind, f"bool hv{i}_[{RPT}];")
    w.emit(ind, f"#pragma unroll\n{'  ' * ind}for (int j_ = 0; j_ < {RPT}; ++j_) {{")
    w.emit(ind + 1, f"const {I} gr_ = {origin} * {R} + pt_ + j_ * {threads};")
    w.emit(ind + 1, f"hv{i}_[j_] = gr_ < {p.extent};")
    w.decompose("gr_", p.rows, ind + 1)
    for v, _ in p.rows:
        w.emit(ind + 1, f"hr{i}_{v}[j_] = {v};")
    w.emit(ind, "}")


def emit_hoisted_gather(w, g: Contraction, p, i: int, dst: str, R: int, BK: int, ind: int, threads: int,
                        EPC: int, lo_off: int = 0, cpasync: bool = False) -> None:
    """One slice of operand i's tile: per chunk column its k split once, then each of the thread's
    rows from the table; zeros past k's end, past the rows' and where the guard fails."""
    buf, index, valid = p.vector.args
    I, RPT, CC = w.IDX, R // threads, BK // EPC
    load = f"{buf} + ({w.idx(index)})"
    ok = "true" if valid is sm.ONE else f"({w.idx(valid)})"
    if cpasync:
        w.emit(ind, "ca_ = true;")
    else:
        w.emit(ind, f"uint4 xs_[{CC * RPT}];")
    w.emit(ind, f"#pragma unroll\n{'  ' * ind}for (int cc_ = 0; cc_ < {CC}; ++cc_) {{")
    w.emit(ind + 1, f"const {I} gk_ = ({I})it * {BK} + cc_ * {EPC};")
    w.emit(ind + 1, "const bool kv_ = gk_ < K_;")
    w.decompose("gk_", g.k, ind + 1)
    w.emit(ind + 1, f"#pragma unroll\n{'  ' * (ind + 1)}for (int j_ = 0; j_ < {RPT}; ++j_) {{")
    for v, _ in p.rows:
        w.emit(ind + 2, f"const {I} {v} = hr{i}_{v}[j_];")
    w.emit(ind + 2, f"const bool ok_ = kv_ && hv{i}_[j_] && {ok};")
    if cpasync:  # (a failed guard copies nothing from the buffer's start: zero-filled)
        w.emit(ind + 2, "const int rr_ = pt_ + j_ * " + str(threads) + ";")
        w.emit(ind + 2, f"em_cp_async16({dst} + rr_ * {SWIZZLE_BYTES} + ((cc_ ^ (rr_ & 7)) << 4), "
                        f"ok_ ? (const void*)({load}) : (const void*){buf}, ok_);")
    else:
        w.emit(ind + 2, f"xs_[cc_ * {RPT} + j_] = ok_ ? *reinterpret_cast<const uint4*>({load}) : make_uint4(0u, 0u, 0u, 0u);")
    w.emit(ind + 1, "}")
    w.emit(ind, "}")
    if cpasync:
        return
    w.emit(ind, f"#pragma unroll\n{'  ' * ind}for (int cc_ = 0; cc_ < {CC}; ++cc_) {{")
    w.emit(ind + 1, f"#pragma unroll\n{'  ' * (ind + 1)}for (int j_ = 0; j_ < {RPT}; ++j_) {{")
    w.emit(ind + 2, f"const int rr_ = pt_ + j_ * {threads};")
    w.emit(ind + 2, f"const uint4 x_ = xs_[cc_ * {RPT} + j_];")
    at = f"{dst} + rr_ * {SWIZZLE_BYTES} + ((cc_ ^ (rr_ & 7)) << 4)"
    if lo_off:  # tf32x3: hi and lo TF32 parts of the four floats
        w.emit(ind + 2, "const float xf_[4] = {__uint_as_float(x_.x), __uint_as_float(x_.y), "
                        "__uint_as_float(x_.z), __uint_as_float(x_.w)};")
        w.emit(ind + 2, f"em_split3_store({at}, {lo_off}, xf_);")
    else:
        w.emit(ind + 2, f"em_st_shared_v4({at}, x_.x, x_.y, x_.z, x_.w);")
    w.emit(ind + 1, "}")
    w.emit(ind, "}")
