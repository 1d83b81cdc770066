"""Keys-major tensor-core products for flash-decoding (knob `kt` of codegen/cuda_flash_decode.py).

A decode group has few query rows (a GQA group: 4), and the row-major form pads them to the
`mma.m16n8k16`'s 16 rows: three quarters of every product and of the online step's work is
padding. Here the keys are the product's 16 rows and the query rows its 8 columns:

    S^T [keys x rows] = K [keys x d] . Q^T [d x rows]      A = the key tile (ldmatrix), B = q, kept in registers
    O^T [dv x rows]  += V^T [dv x keys] . P^T [keys x rows] A = the value tile (ldmatrix.trans), B = P

P^T's B fragment is the score accumulator packed to 16 bits and transposed in registers by
`movmatrix` (the accumulator holds (key, row) pairs as lane / 4, 2 (lane % 4); B wants them as
2 (lane % 4), lane / 4). Per 16-key tile: D/16 + DV/16 products instead of twice that, the
output accumulator DV/16 x 4 floats instead of DV/8 x 4, four scores a thread instead of eight.
A thread's rows are 2 (lane % 4) and 2 (lane % 4) + 1 (at most 8 rows: `R <= 8`); a row's keys
spread over the 8 lanes of equal lane % 4, so its max and sum reduce with xor shuffles 4, 8, 16.

Also here, the ring's other copy forms for keys-major tiles, measured slower than the per-lane
`cp.async` copies and kept as knobs (docs/attention.md): `bulk` (a bulk copy per key row into
padded rows, `emit_bulk_*`) and `tma` (tensor-map copies of 64-column swizzled boxes,
`tma_spec`, `emit_tma_tile`), both waiting on a per-slot mbarrier.
"""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel.online import KEY
from .cuda_tma import _affine


def emit_qt_fragments(w, D: int, ind: int) -> None:
    """qt_[D/16][2]: q's rows 0-7 (shared-memory tile `Qs`, 16-byte chunks swizzled by row) as the
    B fragments of each 16-deep k step; one ldmatrix.x4 covers two k steps."""
    e = w.emit
    e(ind, f"unsigned qt_[{D // 16}][2];")
    e(ind, "#pragma unroll")
    e(ind, f"for (int kk = 0; kk < {D // 16}; kk += 2) {{")
    e(ind + 1, "unsigned f_[4];")
    e(ind + 1, "const int r_ = lane_ & 7, ch_ = kk * 2 + (lane_ >> 3);")
    e(ind + 1, f"em_ldsm4(f_, Qs + r_ * {D} + ((ch_ ^ (r_ & 7)) << 3));")
    e(ind + 1, "qt_[kk][0] = f_[0]; qt_[kk][1] = f_[1]; qt_[kk + 1][0] = f_[2]; qt_[kk + 1][1] = f_[3];")
    e(ind, "}")


def emit_kt_offsets(w, D: int, DV: int, ind: int, pitch: tuple | None = None, swizzle: bool | None = None) -> None:
    """Each lane's ldmatrix offsets into a key tile (kof_) and a value tile (vof_) for the first four
    16-column steps, kept in registers (em_opaque: the compiler otherwise rebuilds them from the
    thread index at every tile). A swizzled chunk index (c ^ (row & 7)) changes only in its low three
    bits, so step j + 4 is step j's offset plus 64 elements, and a later 16-row block adds rows x width:
    immediates of the ldmatrix. `pitch` (key row, value row): the bulk-copied ring's padded rows,
    not swizzled (a row 16 bytes past a multiple of 128: ldmatrix's 8 rows fall in 8 bank groups);
    or (64, 64) swizzled: the tensor-map ring's 64-column boxes (the caller steps to the second box)."""
    e = w.emit
    pk, pv = pitch or (D, DV)
    swizzle = pitch is None if swizzle is None else swizzle  # (the tensor-map ring: 64-column boxes, swizzled)
    sw = " ^ (kr_ & 7)" if swizzle else ""
    swv = " ^ (vr_ & 7)" if swizzle else ""
    e(ind, "int kof_[4], vof_[4];")
    e(ind, "#pragma unroll")
    e(ind, "for (int j = 0; j < 4; ++j) {")
    e(ind + 1, "const int kr_ = lane_ & 15, kc_ = j * 2 + (lane_ >> 4);")
    e(ind + 1, f"kof_[j] = em_opaque(kr_ * {pk} + ((kc_{sw}) << 3));")
    e(ind + 1, "const int vr_ = (lane_ & 7) + ((lane_ >> 4) << 3), vc_ = j * 2 + ((lane_ >> 3) & 1);")
    e(ind + 1, f"vof_[j] = em_opaque(vr_ * {pv} + ((vc_{swv}) << 3));")
    e(ind, "}")


def emit_scores_kt(w, D: int, BN: int, ty: str, ind: int, chains: int = 1, pitch: int = 0, hi: int = 64,
                   name: str = "s_", tile: str = "Kt", declare: bool = True) -> None:
    """s_[BN/16][4]: per 16 keys m, the accumulator of S^T: s_[m][c] is key m*16 + lane/4 + 8 (c >> 1),
    row 2 (lane % 4) + (c & 1). `chains` 2: the even and odd k steps accumulate apart and are added
    at the end (two dependent chains of D/32 products instead of one of D/16). `name` / `tile`: the
    accumulator array and the key tile's pointer (knob `pipe`: the next tile's scores)."""
    e = w.emit
    if declare:
        e(ind, f"float {name}[{BN // 16}][4];")
    e(ind, "#pragma unroll")
    e(ind, f"for (int m = 0; m < {BN // 16}; ++m) {{")
    e(ind + 1, f"{name}[m][0] = {name}[m][1] = {name}[m][2] = {name}[m][3] = 0.f;")
    if chains == 2:
        e(ind + 1, "float s2_[4] = {0.f, 0.f, 0.f, 0.f};")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, f"for (int kk = 0; kk < {D // 16}; ++kk) {{")
    e(ind + 2, "unsigned a_[4];")
    e(ind + 2, f"em_ldsm4(a_, {tile} + kof_[kk & 3] + (kk >> 2) * {hi} + m * {16 * (pitch or D)});")
    if chains == 2:
        e(ind + 2, f'if (kk & 1) {{ EM_MMA16816("{ty}", s2_, a_, qt_[kk][0], qt_[kk][1]); }}')
        e(ind + 2, f'else {{ EM_MMA16816("{ty}", {name}[m], a_, qt_[kk][0], qt_[kk][1]); }}')
    else:
        e(ind + 2, f'EM_MMA16816("{ty}", {name}[m], a_, qt_[kk][0], qt_[kk][1]);')
    e(ind + 1, "}")
    if chains == 2:
        e(ind + 1, f"{name}[m][0] += s2_[0]; {name}[m][1] += s2_[1]; {name}[m][2] += s2_[2]; {name}[m][3] += s2_[3];")
    e(ind, "}")


def score_key_row(c: str = "c") -> tuple[str, str]:
    """(key offset in the tile, row) of a thread's score s_[m][c] (the caller adds m * 16)."""
    return f"(lane_ >> 2) + (({c} >> 1) << 3)", f"((lane_ & 3) << 1) + ({c} & 1)"


def emit_online_kt(w, BN: int, DV: int, c: str, ind: int) -> None:
    """The online recurrence over s_ (X applied) for the thread's rows h = 0, 1: the running max over
    the row's 8 lanes, l_ (a lane's partial, reduced after the loop) and o_ rescaled, s_ <- P."""
    e = w.emit
    e(ind, "#pragma unroll")
    e(ind, "for (int h = 0; h < 2; ++h) {")
    e(ind + 1, "float mx_ = m_[h];")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, f"for (int m = 0; m < {BN // 16}; ++m) mx_ = fmaxf(mx_, fmaxf(s_[m][h], s_[m][h + 2]));")
    for x in (4, 8, 16):
        e(ind + 1, f"mx_ = fmaxf(mx_, __shfl_xor_sync(0xffffffffu, mx_, {x}));")
    e(ind + 1, f"const float mc_ = (mx_ == -INFINITY ? 0.f : mx_) * {c};")
    e(ind + 1, f"const float a_ = em_ex2(fmaf(m_[h], {c}, -mc_));")
    e(ind + 1, "m_[h] = mx_;")
    e(ind + 1, "float ls_ = 0.f;")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, f"for (int m = 0; m < {BN // 16}; ++m) {{")
    e(ind + 2, f"s_[m][h] = em_ex2(fmaf(s_[m][h], {c}, -mc_));")
    e(ind + 2, f"s_[m][h + 2] = em_ex2(fmaf(s_[m][h + 2], {c}, -mc_));")
    e(ind + 2, "ls_ += s_[m][h] + s_[m][h + 2];")
    e(ind + 1, "}")
    e(ind + 1, "l_[h] = l_[h] * a_ + ls_;")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, f"for (int n = 0; n < {DV // 16}; ++n) {{ o_[n][h] *= a_; o_[n][h + 2] *= a_; }}")
    e(ind, "}")


def emit_pv_kt(w, BN: int, DV: int, ty: str, ind: int, pitch: int = 0, hi: int = 64) -> None:
    """o_[DV/16][4] += V^T P^T: o_[n][c] is output column n*16 + lane/4 + 8 (c >> 1), row
    2 (lane % 4) + (c & 1); the value tile's A fragments by ldmatrix.trans, P^T's B fragments from
    s_ by movmatrix."""
    e = w.emit
    pack = "em_pack_bf16" if ty == "bf16" else "em_pack_f16"
    e(ind, "#pragma unroll")
    e(ind, f"for (int kk = 0; kk < {BN // 16}; ++kk) {{")
    e(ind + 1, f"const unsigned p0_ = em_movt({pack}(s_[kk][0], s_[kk][1])), p1_ = em_movt({pack}(s_[kk][2], s_[kk][3]));")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, f"for (int n = 0; n < {DV // 16}; ++n) {{")
    e(ind + 2, "unsigned a_[4];")
    e(ind + 2, f"em_ldsm4t(a_, Vt + vof_[n & 3] + (n >> 2) * {hi} + kk * {16 * (pitch or DV)});")
    e(ind + 2, f'EM_MMA16816("{ty}", o_[n], a_, p0_, p1_);')
    e(ind + 1, "}")
    e(ind, "}")


def emit_triples_kt(w, DV: int, ind: int) -> None:
    """After the key loop: the warp's (max, sum, output row) for its rows into wm_, wl_, wo_ (rows of
    16, as the row-major form writes them)."""
    e = w.emit
    e(ind, "#pragma unroll")
    e(ind, "for (int h = 0; h < 2; ++h) {")
    for x in (4, 8, 16):
        e(ind + 1, f"l_[h] += __shfl_xor_sync(0xffffffffu, l_[h], {x});")
    e(ind + 1, "const int r = ((lane_ & 3) << 1) + h;")
    e(ind + 1, "if ((lane_ >> 2) == 0) { wm_[warp_ * 16 + r] = m_[h]; wl_[warp_ * 16 + r] = l_[h]; }")
    e(ind + 1, "#pragma unroll")
    e(ind + 1, f"for (int n = 0; n < {DV // 16}; ++n) {{")
    e(ind + 2, f"wo_[(warp_ * 16 + r) * {DV} + n * 16 + (lane_ >> 2)] = o_[n][h];")
    e(ind + 2, f"wo_[(warp_ * 16 + r) * {DV} + n * 16 + (lane_ >> 2) + 8] = o_[n][h + 2];")
    e(ind + 1, "}")
    e(ind, "}")


def emit_bulk_setup(w, W: int, S: int, slot: int, ind: int, zero: bool = True, maps: int = 0) -> None:
    """The bulk-copied ring (knob `bulk`): each warp's S mbarriers (one per slot, one arrival: the
    lane that expects the slot's bytes), and its ring zeroed once — a tile's rows past the last key
    are not copied, and their stale values must be finite (P = 0 times them)."""
    e = w.emit
    e(ind, f"__shared__ __align__(8) unsigned long long mbar_[{W * S}];")
    e(ind, "if (lane_ == 0) {")
    e(ind + 1, f"for (int s = 0; s < {S}; ++s)")
    e(ind + 2, f"em_mbar_init((unsigned)__cvta_generic_to_shared(&mbar_[warp_ * {S} + s]), 1u);")
    e(ind + 1, 'asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");')
    for j in range(maps):  # (tensor maps in global memory: fenced in before the first copy)
        e(ind + 1, f"em_tma_acquire(em_tma_ + {128 * j});")
    e(ind, "}")
    if zero:
        e(ind, f"for (int i = lane_; i < {S * slot // 8}; i += 32) reinterpret_cast<uint4*>(my_)[i] = make_uint4(0, 0, 0, 0);")
    e(ind, 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
    e(ind, "__syncwarp();")


def emit_bulk_tile(w, f, t: str, s_: str, ind: int, BN: int, S: int, slot: int, pk: int, pv: int, D: int, DV: int) -> None:
    """Key tile `t` into ring slot `s_` by bulk copies: one per key row of K and of V (rows past the
    group's last key skipped), their bytes expected by lane 0 on the slot's mbarrier."""
    e, I = w.emit, w.IDX
    e(ind, f"const {I} kt0_ = k0_ + ({t}) * {BN};")
    e(ind, f"const int nv_ = (int)(k1_ - kt0_ < {BN} ? k1_ - kt0_ : {BN});")
    e(ind, f"unsigned short* dt_ = my_ + ({s_}) * {slot};")
    e(ind, f"const unsigned bar_ = (unsigned)__cvta_generic_to_shared(&mbar_[warp_ * {S} + ({s_})]);")
    e(ind, 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  /* the slot\'s last reads before the copies */')
    e(ind, f"if (lane_ == 0) em_mbar_expect_tx(bar_, (unsigned)nv_ * {(D + DV) * 2}u);")
    e(ind, "__syncwarp();")
    e(ind, "for (int r_ = lane_; r_ < nv_; r_ += 32) {")
    row = sm.var("kt0_", 0, None) + sm.var("r_", 0, None)
    for v, fast, off, p, width in ((f.k, f.depth_var, 0, pk, D), (f.v, f.out_var, BN * pk, pv, DV)):
        src = w.idx(sm.substitute(v.args[1], {KEY: row, fast: sm.const(0)}))
        e(ind + 1, f"em_bulk(dt_ + {off} + r_ * {p}, {v.args[0]} + ({src}), {width * 2}u, bar_);")
    e(ind, "}")


def emit_bulk_wait(w, S: int, ind: int) -> None:
    """Wait for the tile of iteration it_ in slot it_ % S: that slot's (it_ / S)-th phase."""
    w.emit(ind, f"em_mbar_wait((unsigned)__cvta_generic_to_shared(&mbar_[warp_ * {S} + it_ % {S}]), (unsigned)(it_ / {S}) & 1u);")


def tma_spec(v, fast: str, groups: list, keys_bound, width: int, param: int, BN: int) -> dict | None:
    """The tensor map (a launch config `tma` entry, backends/cuda_tma.py) of operand `v`: columns
    (`fast`, unit stride, boxes of 64) x keys (BN a box) x the group variables its index reads, or
    None when the index is not affine with 16-byte strides, or the keys have no finite bound."""
    if not isinstance(keys_bound, int) or width % 64 and width != 32:
        return None
    e = v.args[1]
    ext = dict(groups)
    names = [x for x in sorted(sm.free_vars(e)) if x not in (KEY, fast)]
    aff = _affine(e, [KEY, fast] + names)
    if any(x not in ext for x in names) or aff is None or len(names) > 3:
        return None
    off, coef = aff
    if coef[fast] != 1:
        return None
    strides = [coef[KEY]] + [coef[x] for x in names]
    if any(s % 8 for s in strides) or off % 8:
        return None
    box = min(width, 64)
    dims = [width, keys_bound] + [int(ext[x].value) if ext[x].is_const else None for x in names]
    if any(d is None for d in dims):
        return None
    return {"param": param, "dtype": v.dtype.name, "offset": off, "dims": dims, "strides": strides,
            "box": [box, BN] + [1] * len(names), "coords": names}


def emit_tma_tile(w, t: str, s_: str, ind: int, BN: int, S: int, slot: int, specs: list, D: int, DV: int) -> None:
    """Key tile `t` into ring slot `s_` by tensor-map copies (lane 0: per operand a box of 64 columns
    x BN keys at a time, written 128-byte swizzled, zero past the map's keys), the slot's bytes
    expected on its mbarrier."""
    e, I = w.emit, w.IDX
    e(ind, f"const {I} kt0_ = k0_ + ({t}) * {BN};")
    e(ind, "if (lane_ == 0) {")
    e(ind + 1, f"const unsigned dt_ = (unsigned)__cvta_generic_to_shared(my_ + ({s_}) * {slot});")
    e(ind + 1, f"const unsigned bar_ = (unsigned)__cvta_generic_to_shared(&mbar_[warp_ * {S} + ({s_})]);")
    e(ind + 1, 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  /* the slot\'s last reads before the copies */')
    e(ind + 1, f"em_mbar_expect_tx(bar_, {BN * (D + DV) * 2}u);")
    for j, (sp, width, base) in enumerate(zip(specs, (D, DV), (0, BN * D))):
        box = sp["box"][0]
        for b in range(width // box):
            coords = ", ".join([str(b * box), "(int)kt0_"] + [f"(int){x}" for x in sp["coords"]])
            e(ind + 1, f"em_tma{2 + len(sp['coords'])}(dt_ + {(base + b * BN * box) * 2}u, em_tma_ + {128 * j}, bar_, {coords});")
    e(ind, "}")
    e(ind, "__syncwarp();")
