"""A channels-last convolution's input copied by the copy engine in its im2col mode (knob `im2col`).

The wgmma producer otherwise gathers a conv's input (codegen/cuda_wgmma_feed.py): per 16-byte chunk
it splits the row into (image, output row, output column) and k into (filter tap, channel), tests the
padding and loads. On a 3x3 TF32 conv that arithmetic, not the tensor cores, set the pace (KernelBench
14's conv ran 0.53x cuDNN; splitting the rows once a tile took 5%). TMA's im2col mode does that
walk in hardware: one `cp.async.bulk.tensor.4d ... .im2col` copies `pixelsPerColumn` pixels of
`channelsPerPixel` channels into the same 128-byte-swizzled rows a tiled copy writes, starting at a
filter base (w, h) given per copy, stepping w by the traversal stride inside a bounding box and
wrapping to the next row of pixels and then to the next image, reading each pixel at base +
offsets (the filter tap, 8-bit per dimension) and zero-filling outside the tensor: the conv's
padding (PTX ISA 5.5.4, "im2col mode").

The operand qualifies when its load (a whole-chunk gather) is exactly such a walk, which is checked,
not assumed: the load's index is affine, the rows are (image?, output row p, output column q) with q
fastest, the innermost k variable is the channel (unit stride, a whole number of slices), every other
variable moves the input's w or h coordinate (the filter taps, possibly batch variables of a split
k), and the guard is the set of bounds 0 <= h < H, 0 <= w < W of the model derived below, each of
its conjuncts one of the model's and each model bound it lacks true over the loops' whole domain.
Then a tile's copy per k slice is: channel c0 of the slice, filter base (q0 * s_w - pad_w, p0 * s_h -
pad_h) and image n0 of the tile's first row, offsets the slice's taps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import symbolic as sm
from ..symbolic.arith import _linear
from ..symbolic.assume import conjuncts
from .cuda_tma import SWIZZLE_BYTES, TmaOperand, _affine, _peel

CORNER = (-128, 127)  # a 4-D map's bounding-box corners (signed 8-bit)
MAX_OFFSET = 255  # a 4-D copy's im2col offsets (unsigned 8-bit)
MAX_TRAVERSAL = 8  # element (traversal) strides

IM2COL_HELPER = r"""__device__ __forceinline__ void em_tma_im2col4(em_u32 dst, const void* map, em_u32 bar, int c, int w, int h,
                                               int n, unsigned short ow, unsigned short oh) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};"
               :: "r"(dst), "l"((em_u64)map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar), "h"(ow), "h"(oh) : "memory");
}
"""


@dataclass
class Im2colOperand(TmaOperand):
    """A TMA operand whose map is an im2col one over an NHWC tensor: dims [C, W, H, N]."""
    rows: list = field(default_factory=list)  # (image?, p, q) loops, as the gather had them
    pad: tuple = (0, 0)  # (w, h): the filter base of output (0, 0)
    tstride: tuple = (1, 1)  # (w, h) traversal strides: the conv's strides
    taps: tuple = ({}, {})  # (w, h): {variable: coefficient} of the offsets (filter taps, >= 0)
    upper: tuple = (0, 0)  # (w, h) bounding-box upper corners (relative to W - 1, H - 1)

    @property
    def lower(self) -> tuple:
        return (-self.pad[0], -self.pad[1])


def _int(e) -> int | None:
    if isinstance(e, int):
        return e
    return int(e.value) if getattr(e, "is_const", False) else None


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
    pos = _normal(base, 0)[0]
    neg = frozenset((v, -k) for v, k in pos)
    pad, extent = 0, None
    if math.gcd(*base.values()) != 1:  # (a bound divided by the gcd no longer shows the pad)
        return pad, extent
    for terms, const in bounds:
        if terms == pos:
            pad = -const
    for terms, const in bounds:
        if terms == neg:
            extent = const + 1 - pad
    return pad, extent


def im2col_operand(g, p, BK: int, sizes: dict) -> Im2colOperand | str:
    """The im2col TMA operand for gathered operand p of contraction g (slices of BK elements of k),
    or why it is not one. sizes: buffer name -> elements (None: not known, as many images as the
    rows walk assumed: whether the copy applies, not its map)."""
    ld = p.vector
    if ld is None or _peel(p.val) is not ld:
        return "not a whole-chunk load"
    buf, index, valid = ld.args
    rows = p.rows
    if len(rows) not in (2, 3):
        return f"{len(rows)} row loops (image, output row and column expected)"
    extent = {v: _int(e) for v, e in list(rows) + list(g.k) + list(g.batch)}
    if any(e is None for e in extent.values()):
        return "a symbolic loop extent"
    cvar, C = g.k[-1][0], extent[g.k[-1][0]]
    if C % BK:
        return f"{C} channels, not a whole number of {BK}-element slices"
    aff = _affine(index, sorted(sm.free_vars(index)))
    if aff is None:
        return "an index that is not affine"
    off, strides = aff
    if strides.get(cvar) != 1:
        return "channels not unit-stride"
    if sm.free_vars(valid) - set(strides):
        return "a guard over variables the index does not read"
    bounds = [] if valid is sm.ONE else [_bound(a) for a in conjuncts(valid)]
    if any(b is None for b in bounds):
        return "a guard that is not a set of linear bounds"
    nvar = rows[0][0] if len(rows) == 3 else None
    pvar, qvar = rows[-2][0], rows[-1][0]
    if any(v in strides for v, _ in rows if v not in (pvar, qvar, nvar)) or qvar not in strides or pvar not in strides:
        return "rows that are not (image, p, q)"
    taps = set(strides) - {cvar, nvar, pvar, qvar}
    if any(v in taps for v, _ in rows) or any(strides[v] <= 0 or strides[v] % C for v in taps | {pvar, qvar}):
        return "a spatial stride that is not a positive multiple of the channels"
    wguard = _dimension(qvar, bounds)
    wcoef = {v: strides[v] // C for v in wguard if v in strides}
    pad_w, W = _pad_and_extent(wcoef, bounds)
    widths = [W] if W else sorted({strides[pvar] // (C * s) for s in range(1, MAX_TRAVERSAL + 1)
                                   if strides[pvar] % (C * s) == 0}, reverse=True)
    why = "no consistent image width"
    for W in widths:
        out = _fit(g, p, ld, BK, sizes, extent, off, strides, bounds, C, W, pad_w, nvar, pvar, qvar, taps)
        if not isinstance(out, str):
            return out
        why = out
    return why


def _fit(g, p, ld, BK, sizes, extent, off, strides, bounds, C, W, pad_w, nvar, pvar, qvar, taps):
    """The operand for image width W, or why W does not fit: each tap's stride split into its h and
    w steps (W * C and C), the height read off the guard (else the image stride or the buffer),
    then the model's index and bounds checked against the load's."""
    if W <= 0 or strides[pvar] % (W * C):
        return "no consistent image width"
    wcoef, hcoef = {qvar: strides[qvar] // C}, {pvar: strides[pvar] // (W * C)}
    for v in taps:
        a, b = divmod(strides[v] // C, W)
        if a:
            hcoef[v] = a
        if b:
            wcoef[v] = b
    if wcoef[qvar] >= W:
        return "an output column step past the image width"
    buf = ld.args[0]
    size = sizes.get(buf) if sizes is not None else None
    pad_h, H = _pad_and_extent(hcoef, bounds)
    if H is None:
        H = strides[nvar] // (W * C) if nvar in strides else (size // (W * C) if size else None)
    if H is None or H <= 0 or (nvar in strides and strides[nvar] != H * W * C):
        return "no consistent image height"
    base = off + pad_h * W * C + pad_w * C
    if sizes is None:  # (asked without the buffers, by the search space: as many images as the rows walk)
        size = base + H * W * C * (extent[nvar] if nvar else 1)
    if base < 0 or size is None or size - base < H * W * C:
        return "a window that starts before the buffer or runs past it"
    images = (size - base) // (H * W * C)
    if nvar and extent[nvar] > images:
        return "more images than the buffer holds"
    domain = {v: extent[v] for v in strides}
    model = [_normal(wcoef, -pad_w), _normal({v: -k for v, k in wcoef.items()}, W - 1 + pad_w),
             _normal(hcoef, -pad_h), _normal({v: -k for v, k in hcoef.items()}, H - 1 + pad_h)]
    if any(b not in model for b in bounds) or any(m not in bounds and not _holds(m, domain) for m in model):
        return "a guard that is not the image's bounds"
    sw, sh = wcoef[qvar], hcoef[pvar]
    offs = ({v: k for v, k in wcoef.items() if v != qvar}, {v: k for v, k in hcoef.items() if v != pvar})
    if not (1 <= sw <= MAX_TRAVERSAL and 1 <= sh <= MAX_TRAVERSAL):
        return f"conv strides {sw}, {sh} (the copy engine steps 1-{MAX_TRAVERSAL})"
    if any(sum(k * (extent[v] - 1) for v, k in t.items()) > MAX_OFFSET for t in offs):
        return "filter offsets past 255"
    upper = ((extent[qvar] - 1) * sw - pad_w - (W - 1), (extent[pvar] - 1) * sh - pad_h - (H - 1))
    if any(not CORNER[0] <= x <= CORNER[1] for x in (-pad_w, -pad_h) + upper):
        return "a bounding box past the 8-bit corners"
    itemsize = ld.dtype.itemsize
    if (base * itemsize) % 16 or (C * itemsize) % 16:
        return "a window not 16-byte aligned"
    return Im2colOperand(buffer=buf, dtype=ld.dtype, kmajor=True, offset=base, dims=[C, W, H, images],
                         strides=[C, W * C, H * W * C], batch_vars=[], rows=list(p.rows), pad=(pad_w, pad_h),
                         tstride=(sw, sh), taps=offs, upper=upper)


def _dimension(row: str, bounds: list) -> set:
    """The variables that share a guard bound with output row/column variable `row` (its filter
    taps, where the conv pads)."""
    out = {row}
    for terms, _ in bounds:
        vs = {v for v, _ in terms}
        if row in vs:
            out |= vs
    return out


def launch_entry(p: Im2colOperand, R: int, BK: int) -> dict:
    """The `im2col` part of the operand's tensor map description (backends/cuda_tma.py)."""
    return {"lower": list(p.lower), "upper": list(p.upper), "channels": BK, "pixels": R,
            "estrides": [1, p.tstride[0], p.tstride[1], 1]}


def emit_im2col_copy(w, g, p: Im2colOperand, dst: str, mp: str, R: int, origin: str, BK: int, ind: int, bar: str) -> None:
    """One tile's k slice `it`: the copy from the tile's first pixel at the slice's filter tap."""
    I = w.IDX
    w.emit(ind, "{")
    w.decompose(f"({I})({origin}) * {R}", p.rows, ind + 1)
    w.decompose(f"({I})it * {BK}", g.k, ind + 1)
    n = p.rows[0][0] if len(p.rows) == 3 else "0"
    q, r = p.rows[-1][0], p.rows[-2][0]

    def lin(t: dict) -> str:
        return " + ".join(f"{k} * {v}" for v, k in sorted(t.items())) or "0"
    c = g.k[-1][0]
    w.emit(ind + 1, f"em_tma_im2col4({dst}, {mp}, {bar}, (int){c}, (int)({q} * {p.tstride[0]} - {p.pad[0]}), "
                    f"(int)({r} * {p.tstride[1]} - {p.pad[1]}), (int){n}, (unsigned short)({lin(p.taps[0])}), "
                    f"(unsigned short)({lin(p.taps[1])}));")
    w.emit(ind, "}")


assert SWIZZLE_BYTES == 128  # (a pixel's channels of one slice: one swizzled row, as a tiled copy writes)
