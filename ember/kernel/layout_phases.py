"""Rewrite 0a of the contraction layouts (kernel/layout.py): a strided window over fewer channels than
one 16-byte chunk read instead as a stride-1 window over the stride's phases (space-to-depth).

    y[n, o, i, j] = sum_{c, r, t} w[o, c, r, t] * x[n, c, s*i + r + p, z*j + t + q]
                  = sum_{c', u, v} w'[o, c', u, v] * x'[n, c', i + u, j + v]

    with c' = (c, a, b) for a < s, b < z;  r = s*u + a;  t = z*v + b;
         x'[n, (c, a, b), i', j'] = x[n, c, s*i' + a + p, z*j' + b + q]   (0 outside x)
         w'[o, (c, a, b), u, v]   = w[o, c, s*u + a, z*v + b]              (0 where s*u + a >= kh
                                                                            or z*v + b >= kw)

A stem conv reads pixels of 3 channels: 6 bytes of bf16 (ResNet's 7x7 stride 2), 12 of float32 (the
seed's 11x11 stride 4), padded to one 16-byte chunk (rewrite 0) and walked tap by tap, 49 or 121 taps
of 16 bytes each, which TMA's im2col mode and the gathering producers both move poorly (the seed conv
did not gain from im2col: docs/tensor_cores.md). After the rewrite the pixels are C s z channels
(12 bf16, padded to 16 = 32 bytes; 48 float32 = 192 bytes) over ceil(kh/s) x ceil(kw/z) taps (16, 9),
and the products shrink where the padding did more than the phases add (ResNet's stem: k = 392 -> 256).
x' is an explicit copy (the lowering materialises it; rewrite 2 stores it channels-last), replacing
the channels-last copy rewrite 0b would make of the graph input; w' is a constant made here (a
copy where the weights are given at run time).

Exact in the arithmetic: every added product has a zero weight. Not in one corner: where x holds an
inf or a NaN that no window of the original reads with a nonzero weight but an added tap reads, the
sum becomes NaN (0 * inf). On by default (EMBER_CONV_PHASES=0 turns it off;
=slice, see pad_bytes, is slower). Measured on an H200 (bench/results/gpu-session40-2026-11-28/): ResNet-50 bf16 b32
1.95 -> 1.78 ms, the seed-000 conv at float32 accuracy 699 -> 523 us (=slice 580).
"""
from __future__ import annotations

import os

import numpy as np

from .. import graph as g
from .. import symbolic as sm
from ..symbolic.assume import conjuncts
from ..view import View, index_name, index_vars, row_major_strides
from . import layout as L
from .node_args import reduce_axes

CHUNK_BYTES = 16


def enabled() -> bool:
    return os.environ.get("EMBER_CONV_PHASES", "1") in ("1", "slice")


def pad_bytes() -> int:
    """The phase channels padded to whole 16-byte chunks, or with EMBER_CONV_PHASES=slice to whole
    128-byte k slices (48 float32 -> 64: the im2col copy takes whole slices of one tap; gathered else)."""
    return 128 if os.environ.get("EMBER_CONV_PHASES") == "slice" else CHUNK_BYTES


def phase_layouts(roots: list, target) -> list:
    """The graph with rewrite 0a applied where kernel/layout.py's rewrites run (before them)."""
    if not (enabled() and L.enabled(target)):
        return roots
    return L._rebuild(roots, lambda old, new: phase_split(new))


def phase_split(n: g.Node) -> g.Node:
    """n rewritten as the stride-1 contraction over its window's phases where it matches, else n."""
    if n.op != g.SUM:
        return n
    ops = L._chunked_contraction(n)
    if ops is None or len(ops) != 2:
        return n
    for xo, wo in (ops, ops[::-1]):
        m = _match(n, xo, wo)
        if m is not None and m["C"] * L._element_bytes(ops) < CHUNK_BYTES:
            x2, w2, xv, wv = _phased(n, m, L._element_bytes(ops))
            leaves = {L._leaf(xo): g.view_node(x2, xv), L._leaf(wo): g.view_node(w2, wv)}
            return g.reduce_node(g.SUM, L._with_leaves(n.srcs[0], leaves), reduce_axes(n), tf32=g.is_tf32(n))
    return n


def _linear(e) -> tuple[int, dict | None]:
    """(constant, {variable name: coefficient}) of an index expression linear in bare variables, else (0, None)."""
    if e.is_const:
        return e.value, {}
    if e.op == "var":
        return 0, {e.args[0]: 1}
    if e.op != "add" or any(t.op != "var" for t, _ in e.args[1]):
        return 0, None
    return e.args[0], {t.args[0]: k for t, k in e.args[1]}


def _bare(e):
    return e.args[0] if e.op == "var" else None


def _match(n: g.Node, xo: g.Node, wo: g.Node) -> dict | None:
    """The window's parts where xo reads x[n, c, s*i + r + p, z*j + t + q] (a 4-D source) and wo reads a
    constant w[o, c, r, t] with c, r, t the summed variables and s or z above 1, else None."""
    xs, ws = L._source_view(xo), L._source_view(wo)
    if xs is None or ws is None:
        return None
    (x, xv), (w, wv) = xs, ws
    if x.ndim != 4 or w.ndim != 4 or wv.valid is not sm.ONE:
        return None
    summed = {index_name(a) for a in reduce_axes(n)}
    xc, wc = L._coords(xv, x.shape), L._coords(wv, w.shape)
    if xc is None or wc is None:
        return None
    cv, rv, tv = (_bare(e) for e in wc[1:])
    if {cv, rv, tv} != summed or _bare(xc[1]) != cv or summed & (sm.free_vars(xc[0]) | sm.free_vars(wc[0])):
        return None
    rows = []
    for d, kv in ((2, rv), (3, tv)):  # h = s*i + r + p: one output variable, the tap with step 1
        const, terms = _linear(xc[d])
        if terms is None or terms.pop(kv, None) != 1 or len(terms) != 1:
            return None
        (ov, s), = terms.items()
        if ov in summed or s < 1:
            return None
        rows.append((ov, kv, s, const))
    (iv, _, s, p), (jv, _, z, q) = rows
    if s == 1 and z == 1:
        return None
    prod = n.srcs[0]
    ext = {index_name(d): prod.shape[d].value for d in range(prod.ndim)}
    H, W = x.shape[2].value, x.shape[3].value
    if not _guard_is_the_padding(xv.valid, rows, ext, (H, W)):
        return None
    return {"x": x, "w": w, "C": x.shape[1].value, "rows": rows, "ext": ext, "xc0": xc[0], "wc0": wc[0],
            "cv": cv, "OH": ext[iv], "OW": ext[jv], "s": s, "z": z, "p": p, "q": q}


def _guard_is_the_padding(valid, rows, ext: dict, HW: tuple) -> bool:
    """Whether the operand's guard is exactly 0 <= s*i + r + p < H and the same for the columns (a
    zero-padded window, nothing else), checked over every (i, r) and (j, t) pair."""
    atoms = [a for a in conjuncts(valid) if a is not sm.ONE]
    per_axis = [[a for a in atoms if sm.free_vars(a) <= {ov, kv}] for ov, kv, _, _ in rows]
    if sum(map(len, per_axis)) != len(atoms):
        return False
    for (ov, kv, s, p), mine, extent in zip(rows, per_axis, HW):
        for i in range(ext[ov]):
            for r in range(ext[kv]):
                env = {ov: i, kv: r}
                if all(sm.evaluate(a, env) for a in mine) != (0 <= s * i + r + p < extent):
                    return False
    return True


def _phased(n: g.Node, m: dict, es: int):
    """(x' as an explicit copy, w' as a constant, the two operands' views over the product's new shape);
    the C s z channels padded with zeros to whole chunks here (one copy, not a second for rewrite 0)."""
    x, w, C, s, z, p, q = m["x"], m["w"], m["C"], m["s"], m["z"], m["p"], m["q"]
    (iv, rv, _, _), (jv, tv, _, _) = m["rows"]
    KH, KW = m["ext"][rv], m["ext"][tv]
    Qh, Qw = -(-KH // s), -(-KW // z)
    Hi, Wi = m["OH"] - 1 + Qh, m["OW"] - 1 + Qw
    Cs = C * s * z
    pb = pad_bytes()
    Cp = -(-Cs * es // pb) * pb // es

    def phases(v: View) -> View:  # rows p .. p + s*Hi of x (zeros outside), split into (i', a)
        pads, N = [(0, 0)] * 4, x.shape[0]
        for d, (st, off, n_) in ((2, (s, p, Hi)), (3, (z, q, Wi))):
            pads[d] = (max(0, -off), max(0, off + st * n_ - x.shape[d].value))
        v = v.pad(pads)
        for d, (st, off, n_) in ((2, (s, p, Hi)), (3, (z, q, Wi))):
            start = off + pads[d][0]
            v = v.slice(d, start, start + st * n_)
        v = v.reshape((N, C, Hi, s, Wi, z)).permute((0, 1, 3, 5, 2, 4))
        return v.reshape((N, Cs, Hi, Wi)).pad([(0, 0), (0, Cp - Cs), (0, 0), (0, 0)])

    def taps(v: View) -> View:  # the kernel padded with zero taps to Qh x Qw phases, split as x's rows
        O = w.shape[0]
        v = v.pad([(0, 0), (0, 0), (0, s * Qh - KH), (0, z * Qw - KW)])
        v = v.reshape((O, C, Qh, s, Qw, z)).permute((0, 1, 3, 5, 2, 4)).reshape((O, Cs, Qh, Qw))
        return v.pad([(0, 0), (0, Cp - Cs), (0, 0), (0, 0)])

    x2 = L._copy(g.apply_view(x, phases))
    if w.op == g.DATA:  # a constant: at compile time
        wa = w.arg.array
        wp = np.pad(wa, [(0, 0), (0, 0), (0, s * Qh - KH), (0, z * Qw - KW)])
        wp = wp.reshape(wa.shape[0], C, Qh, s, Qw, z).transpose(0, 1, 3, 5, 2, 4).reshape(wa.shape[0], Cs, Qh, Qw)
        wp = np.pad(wp, [(0, 0), (0, Cp - Cs), (0, 0), (0, 0)])
        w2 = g.data_node(np.ascontiguousarray(wp), f"{w.arg.name}.phases{s}x{z}", w.dtype)
    else:  # weights given at run time (a benchmark's, a training step's): a copy, as x's
        w2 = L._copy(g.apply_view(w, taps))
    prod = n.srcs[0]
    new_ext = {m["cv"]: Cp, rv: Qh, tv: Qw}
    shape = tuple(sm.const(new_ext.get(index_name(d), prod.shape[d].value)) for d in range(prod.ndim))
    nv = {index_name(d): v for d, v in enumerate(index_vars(shape))}
    c, u, t, i, j = nv[m["cv"]], nv[rv], nv[tv], nv[iv], nv[jv]
    xs, ws = row_major_strides(x2.shape), row_major_strides(w2.shape)
    xi = sm.sum_of([m["xc0"] * xs[0], c * xs[1], (i + u) * xs[2], (j + t) * xs[3]])
    wi = sm.sum_of([m["wc0"] * ws[0], c * ws[1], u * ws[2], t * ws[3]])
    return x2, w2, View(shape, xi, sm.ONE), View(shape, wi, sm.ONE)
