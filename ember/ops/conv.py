"""Convolutions and pooling: pad, then an unfold *view* (sliding windows as index arithmetic), then a
broadcast multiply + sum (conv) or a max/mean over the window axes (pooling). No im2col copy exists
unless the compiler decides to materialise one."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import graph as g
from ..tensor import ShapeError, Tensor, _float, tensor
from .movement import pad_axes
from .reduce import contract

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
           "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d", "unfold_windows"]


def _tuple(v, n: int, what: str) -> tuple:
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) != n:
        raise ValueError(f"{what} needs {n} values, got {v}")
    return v


def unfold_windows(x: Tensor, axes: Sequence[int], sizes: Sequence[int], strides: Sequence[int],
                   dilations: Sequence[int]) -> Tensor:
    """Replace each axis a of x by (windows, size) — a view. Axes are processed last-first so earlier
    axis numbers stay valid."""
    for a, k, s, d in sorted(zip(axes, sizes, strides, dilations), reverse=True):
        x = Tensor(g.apply_view(x.node, lambda v, a=a, k=k, s=s, d=d: v.unfold(a, k, s, d)))
    return x


def _check_windows(op: str, xp: Tensor, kernel, dilation) -> None:
    """Every spatial axis of the padded input xp must hold at least one window: a clear error here
    instead of one from deep inside the view arithmetic."""
    nd = len(kernel)
    for i, (n, k, d) in enumerate(zip(xp.node.shape[xp.ndim - nd:], kernel, dilation)):
        span = d * (k - 1) + 1
        if n.is_const and n.value < span:
            raise ShapeError(f"{op}: kernel {tuple(kernel)} with dilation {tuple(dilation)} spans {span}, but "
                             f"spatial axis {i} is only {n.value} long after padding (padded input {xp.shape})")


def _conv(x: Tensor, w: Tensor, bias, stride, padding, dilation, groups: int, nd: int) -> Tensor:
    if x.ndim == nd + 1 and w.ndim == nd + 2:  # unbatched (C, *spatial), as torch accepts
        return _conv(x.unsqueeze(0), w, bias, stride, padding, dilation, groups, nd).squeeze(0)
    if x.ndim != nd + 2 or w.ndim != nd + 2:
        raise ShapeError(f"conv{nd}d expects input (N, C, {'*' * nd}) and weight (O, C/groups, {'k' * nd}); "
                         f"got {x.shape} and {w.shape}")
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    n, c = x.node.shape[:2]
    o, cg = w.node.shape[:2]
    ks = [s.value for s in w.node.shape[2:]]
    if not (c.is_const and o.is_const):
        raise ShapeError("conv channels must be static")
    if c.value != cg.value * groups or o.value % groups:
        raise ShapeError(f"conv: input channels {c} and weight {w.shape} do not fit groups={groups}")
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError("padding='same' needs stride 1")
            tot = [d * (k - 1) for d, k in zip(dilation, ks)]
            pads = [(t // 2, t - t // 2) for t in tot]
        else:
            raise ValueError(f"padding must be an int, a tuple, 'same' or 'valid', got {padding!r}")
    else:
        pads = [(p, p) for p in _tuple(padding, nd, "padding")]
    if x.dtype != w.dtype:
        from .. import dtypes as dt
        d = dt.promote(x.dtype, w.dtype)
        x, w = x.cast(d), w.cast(d)
    x = pad_axes(x, [(0, 0), (0, 0)] + list(pads))
    _check_windows(f"conv{nd}d", x, ks, dilation)
    sp = list(range(2, 2 + nd))
    xu = unfold_windows(x, sp, ks, stride, dilation)  # (N, C, O1, K1, O2, K2, ...)
    outs = [xu.node.shape[2 + 2 * i] for i in range(nd)]
    og = o.value // groups
    # (N, G, Cg, O1, K1, ...) -> (N, G, 1, O1.., Cg, K1..)
    xu = xu.reshape([n, groups, cg] + list(xu.node.shape[2:]))
    perm = [0, 1] + [3 + 2 * i for i in range(nd)] + [2] + [4 + 2 * i for i in range(nd)]
    xu = xu.permute(perm).unsqueeze(2)
    wr = w.reshape([groups, og, cg] + ks).reshape([1, groups, og] + [1] * nd + [cg] + ks)
    full = [n, groups, og] + outs + [cg] + ks
    prod = xu.broadcast_to(full) * wr.broadcast_to(full)
    red = tuple(range(3 + nd, 3 + nd + 1 + nd))
    y = contract(prod, red, "conv").reshape([n, o] + outs)
    if bias is not None:
        y = y + bias.reshape([1, o.value] + [1] * nd)
    return y


def conv1d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _conv(x, w, bias, stride, padding, dilation, groups, 1)


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _conv(x, w, bias, stride, padding, dilation, groups, 2)


def conv3d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _conv(x, w, bias, stride, padding, dilation, groups, 3)


def _conv_transpose(x: Tensor, w: Tensor, bias, stride, padding, output_padding, groups: int, dilation, nd: int) -> Tensor:
    """Transposed conv = zero-insertion (a dilate view) + padding + an ordinary conv with the weight
    flipped and its in/out channel axes swapped."""
    if x.ndim == nd + 1 and w.ndim == nd + 2:  # unbatched (C, *spatial), as torch accepts
        return _conv_transpose(x.unsqueeze(0), w, bias, stride, padding, output_padding, groups, dilation,
                               nd).squeeze(0)
    if x.ndim != nd + 2 or w.ndim != nd + 2:
        raise ShapeError(f"conv_transpose{nd}d expects input (N, C, ...) and weight (C, O/groups, ...); got {x.shape}, {w.shape}")
    stride, padding = _tuple(stride, nd, "stride"), _tuple(padding, nd, "padding")
    output_padding, dilation = _tuple(output_padding, nd, "output_padding"), _tuple(dilation, nd, "dilation")
    cin, og = w.node.shape[0].value, w.node.shape[1].value
    ks = [s.value for s in w.node.shape[2:]]
    if x.node.shape[1].value != cin or cin % groups:
        raise ShapeError(f"conv_transpose: input channels {x.shape[1]} do not match weight {w.shape} / groups={groups}")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:  # torch's rule: the extra rows must lie inside one stride or dilation step
            raise ValueError(f"conv_transpose{nd}d: output_padding {output_padding} must be smaller than either "
                             f"stride {stride} or dilation {dilation}")
    if any(s > 1 for s in stride):
        # a dilated kernel is the kernel with d - 1 zeros between its taps (a dilate view): the
        # phase form at dilation 1 then covers it (a stride-1 conv over the undilated input, where
        # the zero-inserted form reads a dilated input through divisions under parity guards)
        for a, d in enumerate(dilation):
            if d > 1:
                w = Tensor(g.apply_view(w.node, lambda v, a=a, d=d: v.dilate(2 + a, d)))
        live = [_live_phases(k, d, s) for k, d, s in zip(ks, dilation, stride)]
        ks = [(k - 1) * d + 1 for k, d in zip(ks, dilation)]
        return _conv_transpose_phases(x, w, bias, stride, padding, output_padding, groups, ks, nd, live)
    for a, s in enumerate(stride):
        x = Tensor(g.apply_view(x.node, lambda v, a=a, s=s: v.dilate(2 + a, s)))
    per = [(0, 0), (0, 0)]
    for k, d, p, op in zip(ks, dilation, padding, output_padding):
        lo = d * (k - 1) - p
        per.append((lo, lo + op))
    flat = []
    for lo, hi in reversed(per):
        flat += [lo, hi]
    from .movement import pad
    x = pad(x, flat)
    cg = cin // groups
    wt = w.reshape([groups, cg, og] + ks).permute([0, 2, 1] + list(range(3, 3 + nd)))
    wt = wt.reshape([groups * og, cg] + ks).flip(list(range(2, 2 + nd)))
    return _conv(x, wt, bias, 1, 0, dilation, groups, nd)


def _live_phases(k: int, d: int, s: int) -> tuple:
    """(lo, hi): the phases r of an axis (stride s) that some of its k taps at dilation d reach
    (tap t lands on phase t*d mod s), when they are the contiguous run lo..hi-1; else all (0, s).
    At s = d = 2 only phase 0 is reached: the others are zeros (+ bias) and are not computed."""
    hit = sorted({(t * d) % s for t in range(k)})
    lo, hi = hit[0], hit[-1] + 1
    return (lo, hi) if hi - lo == len(hit) else (0, s)


def _conv_transpose_phases(x: Tensor, w: Tensor, bias, stride, padding, output_padding, groups: int, ks: list,
                           nd: int, live: list | None = None) -> Tensor:
    """Transposed conv (dilation 1: a dilated kernel comes in zero-inserted) as ONE ordinary stride-1
    conv over the undilated input whose output channels are (channel, phase) pairs, then an
    interleave (a view) and a crop. `live`: per axis the run of phases computed (_live_phases); the
    others are zeros, padded in before the interleave.

    Along an axis of stride s, output t = o + padding gets input i through tap k = t - i*s; write
    t = q*s + r: the taps that reach phase r are k = r + m*s, so y_r[q] = sum_m x[q - m] w[r + m*s],
    a correlation with M = ceil(K/s) taps (zero taps where r + m*s >= K). Every phase has the same
    M, so all s^nd phases stack along the output channels of one conv. The zero-insertion form does
    K^nd taps per output, of which about (K/s)^nd are not zeros; this one does M^nd."""
    n, cin = x.node.shape[:2]
    og = w.node.shape[1].value
    cg = cin.value // groups
    ms = [-(-k // s) for k, s in zip(ks, stride)]
    live = live or [(0, s) for s in stride]  # phases computed per axis; the others are zeros
    phases = math.prod(hi - lo for lo, hi in live)
    ins = [x.node.shape[2 + a] for a in range(nd)]
    if not all(i.is_const for i in ins):
        raise ShapeError("conv_transpose: spatial sizes must be static")
    ins = [i.value for i in ins]
    outs = [(i - 1) * s - 2 * p + k + op for i, s, p, k, op in zip(ins, stride, padding, ks, output_padding)]
    qs = [-(-(p + o) // s) for p, o, s in zip(padding, outs, stride)]  # phase rows needed per axis
    # weight (Cin, Og, K..) -> (G*Og*phases, Cg, M..): taps padded to M*s, split (m, r), m reversed
    wp = pad_axes(w, [(0, 0), (0, 0)] + [(0, m * s - k) for m, s, k in zip(ms, stride, ks)])
    split = [groups, cg, og]
    for m, s in zip(ms, stride):
        split += [m, s]
    wp = wp.reshape(split).flip([3 + 2 * a for a in range(nd)])  # (G, Cg, Og, M1, s1, M2, s2, ..)
    if any(hi - lo < s for (lo, hi), s in zip(live, stride)):
        wp = wp[(slice(None),) * 3 + sum(((slice(None), slice(lo, hi)) for lo, hi in live), ())]
    perm = [0, 2] + [4 + 2 * a for a in range(nd)] + [1] + [3 + 2 * a for a in range(nd)]
    wc = wp.permute(perm).reshape([groups * og * phases, cg] + ms)
    # input padded M-1 before (the taps reach back M-1 rows) and after to give at least Q rows
    xp = pad_axes(x, [(0, 0), (0, 0)] + [(m - 1, max(0, q - i)) for m, q, i in zip(ms, qs, ins)])
    y = _conv(xp, wc, None, 1, 0, 1, groups, nd)  # (N, G*Og*phases, >= Q..)
    y = y[(slice(None), slice(None)) + tuple(slice(0, q) for q in qs)]
    y = y.reshape([n, groups, og] + [hi - lo for lo, hi in live] + qs)
    if any(hi - lo < s for (lo, hi), s in zip(live, stride)):  # the phases no tap reaches: zeros
        y = pad_axes(y, [(0, 0)] * 3 + [(lo, s - hi) for (lo, hi), s in zip(live, stride)] + [(0, 0)] * nd)
    perm = [0, 1, 2]
    for a in range(nd):
        perm += [3 + nd + a, 3 + a]
    y = y.permute(perm).reshape([n, groups * og] + [q * s for q, s in zip(qs, stride)])
    y = y[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, outs))]
    if bias is not None:
        y = y + bias.reshape([1, groups * og] + [1] * nd)
    return y


def conv_transpose1d(x, w, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1) -> Tensor:
    return _conv_transpose(x, w, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(x, w, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1) -> Tensor:
    return _conv_transpose(x, w, bias, stride, padding, output_padding, groups, dilation, 2)


def _pool_pads(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> tuple[int, int]:
    span = d * (k - 1) + 1
    if ceil_mode:
        out = math.ceil((size + 2 * p - span) / s) + 1
        if (out - 1) * s >= size + p:  # last window must start inside the input or left padding
            out -= 1
    else:
        out = (size + 2 * p - span) // s + 1
    need = (out - 1) * s + span
    return p, max(need - size - p, 0) if ceil_mode else p


def _pool(x: Tensor, kernel, stride, padding, dilation, ceil_mode: bool, nd: int, kind: str,
          count_include_pad: bool = True, divisor_override=None) -> Tensor:
    if x.ndim < nd + 1:
        raise ShapeError(f"{kind}_pool{nd}d expects (N, C, ...) or (C, ...) input, got {x.shape}")
    kernel = _tuple(kernel, nd, "kernel_size")
    stride = _tuple(stride if stride is not None and stride != [] else kernel, nd, "stride")
    padding, dilation = _tuple(padding, nd, "padding"), _tuple(dilation, nd, "dilation")
    lead = x.ndim - nd
    if any(not s.is_const for s in x.node.shape[lead:]):
        raise ShapeError(f"{kind}_pool{nd}d needs static spatial dimensions, got {x.shape}")
    for k, p in zip(kernel, padding):
        if p > k // 2:  # torch's rule: otherwise a window could hold only padding
            raise ValueError(f"{kind}_pool{nd}d: padding {padding} must be at most half of the kernel {kernel}")
    sizes = [s.value for s in x.node.shape[lead:]]
    pads = [_pool_pads(n, k, s, p, d, ceil_mode) for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
    per = [(0, 0)] * lead + pads
    fill = -math.inf if kind == "max" else 0.0
    if kind == "max" and not x.dtype.is_float:
        fill = int(np.iinfo(x.dtype.np).min)
    xp = pad_axes(x if kind == "max" else _float(x), per, fill)
    _check_windows(f"{kind}_pool{nd}d", xp, kernel, dilation)
    axes = list(range(lead, lead + nd))
    xu = unfold_windows(xp, axes, kernel, stride, dilation)
    win = tuple(lead + 2 * i + 1 for i in range(nd))
    if kind == "max":
        return xu.max(win)
    if divisor_override:
        return xu.sum(win) * (1.0 / divisor_override)
    overhang = [hi - p for (lo, hi), p in zip(pads, padding)]  # ceil-mode windows past the padding
    if count_include_pad and not any(overhang):
        return xu.mean(win)
    # divisor = window positions inside the counted region (input, plus explicit padding if included)
    one = Tensor(g.const_node(1.0, xu.dtype))
    if count_include_pad:
        counted = list(x.node.shape[:lead]) + [n + 2 * p for n, p in zip(sizes, padding)]
        mask = pad_axes(one.broadcast_to(counted), [(0, 0)] * lead + [(0, o) for o in overhang])
    else:
        mask = pad_axes(one.broadcast_to(x.node.shape), per)
    cnt = unfold_windows(mask, axes, kernel, stride, dilation).sum(win)
    return xu.sum(win) / cnt


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False) -> Tensor:
    return _pool(x, kernel_size, stride, padding, dilation, ceil_mode, 1, "max")


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False) -> Tensor:
    return _pool(x, kernel_size, stride, padding, dilation, ceil_mode, 2, "max")


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True) -> Tensor:
    return _pool(x, kernel_size, stride, padding, 1, ceil_mode, 1, "avg", count_include_pad)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None) -> Tensor:
    return _pool(x, kernel_size, stride, padding, 1, ceil_mode, 2, "avg", count_include_pad, divisor_override)


def _adaptive_matrix(n: int, out: int) -> np.ndarray:
    m = np.zeros((out, n), np.float32)
    for i in range(out):
        lo, hi = (i * n) // out, -((-(i + 1) * n) // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def adaptive_avg_pool2d(x: Tensor, output_size) -> Tensor:
    """Averages over torch's adaptive windows, as two small constant contractions (rows, then columns)."""
    oh, ow = _tuple(output_size, 2, "output_size")
    if x.ndim < 3 or not (x.node.shape[-2].is_const and x.node.shape[-1].is_const):
        raise ShapeError(f"adaptive_avg_pool2d expects (N, C, H, W) or (C, H, W) with static H and W, got {x.shape}")
    h, w = x.node.shape[-2].value, x.node.shape[-1].value
    oh, ow = oh or h, ow or w
    x = _float(x)
    if h % oh == 0 and w % ow == 0:
        return avg_pool2d(x, (h // oh, w // ow))
    a = tensor(_adaptive_matrix(h, oh)).cast(x.dtype)
    b = tensor(_adaptive_matrix(w, ow)).cast(x.dtype)
    return a.matmul(x).matmul(b.transpose(0, 1))
