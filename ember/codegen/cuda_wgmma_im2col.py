"""A channels-last convolution's input copied by the copy engine in its im2col mode (knob `im2col`).

The wgmma producer otherwise gathers a conv's input (codegen/cuda_wgmma_feed.py): per 16-byte chunk
it splits the row into (image, output row, output column) and k into (filter tap, channel), tests the
padding and loads. On a 3x3 TF32 conv that arithmetic, not the tensor cores, set the pace (KernelBench
14's conv ran 0.53x cuDNN; splitting the rows once a tile took 5%). TMA's im2col mode does that
walk in hardware: one `cp.async.bulk.tensor.{3,4,5}d ... .im2col` copies `pixelsPerColumn` pixels
of `channelsPerPixel` channels into the same 128-byte-swizzled rows a tiled copy writes, starting
at a filter base (w[, h[, d]]) given per copy, stepping w by the traversal stride inside a bounding
box and wrapping to the next row of pixels (h), plane (d) and image (n), reading each pixel at base
+ offsets (the filter tap) and zero-filling outside the tensor: the conv's padding (PTX ISA 5.5.4,
"im2col mode"). 1-, 2- and 3-D convs: maps of rank 3, 4 and 5.

The operand qualifies when its load (a whole-chunk gather) is exactly such a walk, which is checked,
not assumed: the load's index is affine, the rows are (image?, output coordinates, the innermost
fastest), the innermost k variable is the channel (unit stride, a whole number of slices), every
other variable moves the input's spatial coordinates (the filter taps, possibly batch variables of a
split k), and the guard is the set of bounds 0 <= x_i < E_i of the model derived below: each of its
conjuncts one of the model's bounds and each model bound it lacks true over the loops' whole domain.
The extents come from the guard's bounds, else from the next coordinate's stride (each traversal
stride tried) or the image's. A model that passes reads every element the gather reads, at the same
address, zero exactly where the gather's guard fails. Then a tile's copy per k slice is: channel c0
of the slice, the filter base (o_i * s_i - pad_i) and image of the tile's first row, offsets the
slice's taps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import symbolic as sm
from ..symbolic.arith import _linear
from ..symbolic.assume import conjuncts
from .cuda_tma import SWIZZLE_BYTES, TmaOperand, _affine, _peel

# per spatial rank (map rank - 2): the bounding-box corners' range and the largest im2col offset
LIMITS = {1: ((-32768, 32767), 65535), 2: ((-128, 127), 255), 3: ((-16, 15), 31)}
MAX_TRAVERSAL = 8  # element (traversal) strides


def _helper(S: int) -> str:
    coords = ", ".join(f"int x{i}" for i in range(S))
    offs = ", ".join(f"unsigned short o{i}" for i in range(S))
    regs = ", ".join(f"%{i}" for i in range(2, S + 4))  # c, spatial, n
    oregs = ", ".join(f"%{S + 5 + i}" for i in range(S))
    args = ", ".join(['"r"(c)'] + [f'"r"(x{i})' for i in range(S)] + ['"r"(n)', '"r"(bar)'] + [f'"h"(o{i})' for i in range(S)])
    return (f"__device__ __forceinline__ void em_tma_im2col{S + 2}(em_u32 dst, const void* map, em_u32 bar, int c, {coords}, "
            f"int n, {offs}) {{\n"
            f'  asm volatile("cp.async.bulk.tensor.{S + 2}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes '
            f'[%0], [%1, {{{regs}}}], [%{S + 4}], {{{oregs}}};"\n'
            f'               :: "r"(dst), "l"((em_u64)map), {args} : "memory");\n}}\n')


IM2COL_HELPER = "".join(_helper(S) for S in (1, 2, 3))


@dataclass
class Im2colOperand(TmaOperand):
    """A TMA operand whose map is an im2col one over a channels-last tensor: dims [C, x0.., images]
    (x0 the innermost spatial coordinate: w). Per spatial dimension, innermost first:"""
    rows: list = field(default_factory=list)  # the gather's rows: (image?, outer .. inner output coordinate)
    pad: tuple = ()  # the filter base of output 0
    tstride: tuple = ()  # traversal strides: the conv's strides
    taps: tuple = ()  # {variable: coefficient} of the offsets (filter taps, >= 0)
    upper: tuple = ()  # bounding-box upper corners (relative to the extent - 1)
    narrow: bool = False  # a pixel is 16, 32 or 64 bytes: a copy per pixel width of a slice (NARROW)

    @property
    def width(self) -> int:
        """Bytes of one copy's rows: a pixel's channels (narrow), else a whole 128-byte slice."""
        return self.dims[0] * self.dtype.itemsize if self.narrow else SWIZZLE_BYTES

    @property
    def lower(self) -> tuple:
        return tuple(-p for p in self.pad)

    @property
    def spatial(self) -> int:
        return len(self.pad)


def _int(e) -> int | None:
    if isinstance(e, int):
        return e
    return int(e.value) if getattr(e, "is_const", False) else None


def _known(size) -> int:
    """A buffer's elements, -1 where not a known integer (no window then fits it)."""
    n = None if size is None else _int(size)
    return -1 if n is None else n


def _bound(a: sm.Expr):
    """A guard conjunct x < y as (frozenset((var, coef)), const) meaning sum(coef * var) + const >= 0,
    divided by its coefficients' gcd; None where it is not linear in plain variables."""
    if a.op != "lt":
        return None
    c, terms = _linear(sm.sub(a.args[1], a.args[0]))
    if any(t.op != "var" for t in terms) or not terms:
        return None
    return _normal({t.args[0]: int(k) for t, k in terms.items()}, int(c) - 1)


def _normal(coefs: dict, const: int):
    g = math.gcd(*[abs(k) for k in coefs.values() if k])
    return frozenset((v, k // g) for v, k in coefs.items() if k), const // g


def _holds(bound, domain: dict) -> bool:
    """Whether sum(coef * var) + const >= 0 over every point of the loops' box."""
    terms, const = bound
    return const + sum(k * (0 if k > 0 else domain[v] - 1) for v, k in terms) >= 0


def _pad_and_extent(base: dict, bounds: list):
    """(pad, extent or None) of one spatial dimension whose coordinate is sum(base) - pad, read off
    the guard's bounds on it (lower: coordinate >= 0; upper: coordinate < extent). No lower bound:
    pad 0 (the model's check then asks that the coordinate is never negative)."""
    if not base or math.gcd(*base.values()) != 1:  # (a bound divided by a gcd no longer shows the pad)
        return 0, None
    pos = _normal(base, 0)[0]
    neg = frozenset((v, -k) for v, k in pos)
    pad = next((-const for terms, const in bounds if terms == pos), 0)
    return pad, next((const + 1 - pad for terms, const in bounds if terms == neg), None)


def _group(row: str, bounds: list) -> set:
    """The variables that share a guard bound with output coordinate `row` (its filter taps, where
    the conv pads)."""
    out = {row}
    for terms, _ in bounds:
        if any(v == row for v, _ in terms):
            out |= {v for v, _ in terms}
    return out


@dataclass
class _Load:
    """What im2col_operand reads off the gathered load, shared by the interpretations it tries."""
    buf: str
    itemsize: int
    dtype: object
    off: int
    strides: dict
    bounds: list
    extent: dict
    C: int
    size: int | None  # the buffer's elements (None: unknown)
    narrow: bool  # one pixel's channels are 16, 32 or 64 bytes, part of a slice (NARROW)
    rows: list  # the gather's row loops [(var, extent)]


def im2col_operand(g, p, BK: int, sizes: dict | None) -> Im2colOperand | str:
    """The im2col TMA operand for gathered operand p of contraction g (slices of BK elements of k),
    or why it is not one. sizes: buffer name -> elements, int or constant Expr (None: not known, as many images as the
    rows walk assumed: whether the copy applies, not its map)."""
    ld = p.vector
    if ld is None or _peel(p.val) is not ld:
        return "not a whole-chunk load"
    buf, index, valid = ld.args
    rows = p.rows
    extent = {v: _int(e) for v, e in list(rows) + list(g.k) + list(g.batch)}
    if any(e is None for e in extent.values()):
        return "a symbolic loop extent"
    cvar, C = g.k[-1][0], extent[g.k[-1][0]]
    narrow = C * ld.dtype.itemsize in NARROW_SWIZZLE and BK % C == 0  # (a pixel part of a slice: NARROW below)
    if C % BK and not narrow:
        return f"{C} channels, neither a whole number of {BK}-element slices nor 16, 32 or 64 bytes"
    aff = _affine(index, sorted(sm.free_vars(index)))
    if aff is None:
        return "an index that is not affine"
    off, strides = aff
    if strides.pop(cvar, None) != 1:
        return "channels not unit-stride"
    if sm.free_vars(valid) - set(strides) - {cvar}:
        return "a guard over variables the index does not read"
    bounds = [] if valid is sm.ONE else [_bound(a) for a in conjuncts(valid)]
    if any(b is None for b in bounds):
        return "a guard that is not a set of linear bounds"
    L = _Load(buf, ld.dtype.itemsize, ld.dtype, off, strides, bounds, extent, C,
              None if sizes is None else _known(sizes.get(buf)), narrow, list(rows))
    why = f"{len(rows)} row loops"
    for S in (len(rows) - 1, len(rows)):  # with an image loop first, or without one
        if S in LIMITS:
            out = _interpret(L, [v for v, _ in rows], S)
            if not isinstance(out, str):
                return out
            why = out
    return why


def _interpret(L: _Load, rows: list, S: int):
    """The rows as (image?, S output coordinates): each dimension's extent fixed innermost first."""
    nvar = rows[0] if len(rows) == S + 1 else None
    spatial = rows[::-1][:S]  # innermost first
    if any(v not in L.strides for v in spatial) or any(L.strides[v] <= 0 or L.strides[v] % L.C for v in L.strides if v != nvar):
        return "an output coordinate the index does not move, or a stride not a positive multiple of the channels"
    return _extents(L, nvar, spatial, [], [])


def _extents(L: _Load, nvar, spatial: list, ext: list, pads: list):
    """Fix dimension len(ext)'s extent and pad (trying each candidate), then the next; at the last,
    the model's check."""
    i, S = len(ext), len(spatial)
    if i == S:
        return _model(L, nvar, spatial, ext, pads)
    unit = L.C * math.prod(ext)
    group = _group(spatial[i], L.bounds)
    if any(v not in L.strides or L.strides[v] % unit for v in group):
        return "a padded coordinate over variables of another dimension"
    pad, E = _pad_and_extent({v: L.strides[v] // unit for v in group}, L.bounds)
    if E is not None:
        cands = [E]
    elif i + 1 < S:  # unguarded: the next coordinate's stride is E * unit * its traversal stride
        nxt = L.strides[spatial[i + 1]]
        cands = [nxt // (unit * s) for s in range(1, MAX_TRAVERSAL + 1) if nxt % (unit * s) == 0]
    elif nvar in L.strides:  # the last one: the image stride
        cands = [L.strides[nvar] // unit] if L.strides[nvar] % unit == 0 else []
    else:  # no image loop read: as far as the loops reach
        reach = sum(L.strides[v] // unit * (L.extent[v] - 1) for v in L.strides if L.strides[v] >= unit)
        cands = [reach + 1 - pad]
    why = "no consistent extent"
    for E in cands:
        if E > 0:
            out = _extents(L, nvar, spatial, ext + [E], pads + [pad])
            if not isinstance(out, str):
                return out
            why = out
    return why


def _model(L: _Load, nvar, spatial: list, ext: list, pads: list):
    """Each variable's steps per dimension (its stride in mixed radix of the extents), checked: the
    output coordinates move one dimension each by 1-8, taps move forward within the offsets' range,
    the image stride, the buffer's size, and the guard equal to the model's bounds."""
    S, C = len(spatial), L.C
    units = [C * math.prod(ext[:i]) for i in range(S + 1)]
    coefs = [dict() for _ in range(S)]
    for v, st in L.strides.items():
        if v == nvar:
            continue
        t = st // C
        for i in range(S):
            a, t = (divmod(t, ext[i])[::-1] if i + 1 < S else (t, 0))
            if a:
                coefs[i][v] = a
    if nvar in L.strides and L.strides[nvar] != units[S]:
        return "an image stride that is not the image's size"
    if any(set(coefs[j]) & {spatial[i]} for i in range(S) for j in range(S) if j != i):
        return "an output coordinate that moves two input coordinates"
    steps = [coefs[i][spatial[i]] for i in range(S)]
    if not all(1 <= s <= MAX_TRAVERSAL for s in steps):
        return f"conv strides {steps} (the copy engine steps 1-{MAX_TRAVERSAL})"
    base = L.off + sum(pads[i] * units[i] for i in range(S))
    images = L.extent[nvar] if nvar else 1
    size = base + units[S] * images if L.size is None else L.size
    if base < 0 or size - base < units[S]:
        return "a window that starts before the buffer or runs past it"
    images = (size - base) // units[S]
    if nvar and L.extent[nvar] > images:
        return "more images than the buffer holds"
    domain = dict(L.extent)
    model = []
    for i in range(S):
        model += [_normal(coefs[i], -pads[i]), _normal({v: -k for v, k in coefs[i].items()}, ext[i] - 1 + pads[i])]
    if any(b not in model for b in L.bounds) or any(m not in L.bounds and not _holds(m, domain) for m in model):
        return "a guard that is not the image's bounds"
    (lo, hi), most = LIMITS[S]
    taps = tuple({v: k for v, k in coefs[i].items() if v != spatial[i]} for i in range(S))
    if any(k < 0 for t in taps for k in t.values()) or any(sum(k * (domain[v] - 1) for v, k in t.items()) > most for t in taps):
        return f"filter offsets outside 0-{most}"
    upper = tuple((domain[spatial[i]] - 1) * steps[i] - pads[i] - (ext[i] - 1) for i in range(S))
    if any(not lo <= x <= hi for x in tuple(-p for p in pads) + upper):
        return f"a bounding box past the corners' range {lo}..{hi}"
    if (base * L.itemsize) % 16 or (C * L.itemsize) % 16:
        return "a window not 16-byte aligned"
    return Im2colOperand(buffer=L.buf, dtype=L.dtype, kmajor=True, offset=base, dims=[C] + ext + [images],
                         strides=units, batch_vars=[], rows=L.rows, pad=tuple(pads),
                         tstride=tuple(steps), taps=taps, upper=upper, narrow=L.narrow)


# NARROW: where one pixel's channels are 16, 32 or 64 bytes (4 / 8 / 16 float32 channels, 8 / 16 / 32
# bf16: the stems, the seed conv's input padded to 4 channels, the 3-D convs' 16) a slice holds
# BK / C filter taps. Each is then its own copy of R pixels x `width` bytes, landing as a column block
# of R rows at j * R * width bytes of the tile, swizzled by its width (none for 16 bytes: wgmma's
# unswizzled K-major layout of 8-row x 16-byte core matrices; 32- and 64-byte swizzle otherwise): the
# consumers read each block through descriptors of that layout (codegen/cuda_wgmma.py `narrow_desc`).
# A block past k's end is copied from channel C, outside the tensor: zeros, and the bytes the barrier
# expects.
NARROW_SWIZZLE = {16: "none", 32: "32B", 64: "64B"}  # pixel bytes -> the map's swizzle
NARROW_LAYOUT = {16: 0, 32: 3, 64: 2}  # pixel bytes -> the descriptor's layout field (bits 62-63)


def narrow_desc(base: str, R: int, width: int, cw: str, kk: str) -> str:
    """The wgmma descriptor of k step kk (32 bytes of k) for consumer warpgroup cw's 64 rows of a
    narrow tile at `base`: unswizzled, a step spans two 16-byte blocks (LBO = R * 16 between them,
    SBO = 128 between 8-row core matrices); swizzled, a step lies inside one block (SBO = 8 rows)."""
    if width == 16:
        return f"em_gdesc_x({base} + {cw} * 1024 + {kk} * {2 * R * 16}, {R * 16}, 128, 0)"
    per = width // 32  # k steps a block holds
    return (f"em_gdesc_x({base} + ({kk} / {per}) * {R * width} + {cw} * {64 * width} + ({kk} % {per}) * 32, 16, "
            f"{8 * width}, {NARROW_LAYOUT[width]})")


def launch_entry(p: Im2colOperand, R: int, BK: int) -> dict:
    """The `im2col` part of the operand's tensor map description (backends/cuda_tma.py)."""
    C = p.dims[0]
    return {"lower": list(p.lower), "upper": list(p.upper), "channels": C if p.narrow else BK, "pixels": R,
            "estrides": [1, *p.tstride, 1], "swizzle": NARROW_SWIZZLE[p.width] if p.narrow else "128B"}


def emit_im2col_copy(w, g, p: Im2colOperand, dst: str, mp: str, R: int, origin: str, BK: int, ind: int, bar: str) -> None:
    """One tile's k slice `it`: the copy from the tile's first pixel at the slice's filter tap."""
    I, S = w.IDX, p.spatial
    w.emit(ind, "{")
    w.decompose(f"({I})({origin}) * {R}", p.rows, ind + 1)
    n = p.rows[0][0] if len(p.rows) == S + 1 else "0"
    coords = [p.rows[::-1][i][0] for i in range(S)]

    def lin(t: dict) -> str:
        return " + ".join(f"{k} * {v}" for v, k in sorted(t.items())) or "0"
    xs = ", ".join(f"(int)({coords[i]} * {p.tstride[i]} - {p.pad[i]})" for i in range(S))
    offs = ", ".join(f"(unsigned short)({lin(p.taps[i])})" for i in range(S))
    if not p.narrow:
        w.decompose(f"({I})it * {BK}", g.k, ind + 1)
        w.emit(ind + 1, f"em_tma_im2col{S + 2}({dst}, {mp}, {bar}, (int){g.k[-1][0]}, {xs}, (int){n}, {offs});")
        w.emit(ind, "}")
        return
    C = p.dims[0]
    w.emit(ind + 1, f"#pragma unroll\n{'  ' * (ind + 1)}for (int j_ = 0; j_ < {BK // C}; ++j_) {{")
    w.emit(ind + 2, f"const {I} kf_ = ({I})it * {BK} + j_ * {C};")
    w.emit(ind + 2, f"const bool in_ = kf_ < K_;  // (past k's end: channel {C}, outside the tensor, zeros)")
    w.decompose("(in_ ? kf_ : 0)", g.k, ind + 2)
    w.emit(ind + 2, f"em_tma_im2col{S + 2}({dst} + j_ * {R * p.width}, {mp}, {bar}, in_ ? (int){g.k[-1][0]} : {C}, {xs}, (int){n}, {offs});")
    w.emit(ind + 1, "}")
    w.emit(ind, "}")


assert SWIZZLE_BYTES == 128  # (a pixel's channels of one slice: one swizzled row, as a tiled copy writes)
