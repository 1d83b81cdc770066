"""ATen movement and indexing: views, slices, concatenation, padding, gather/index, upsampling."""
from __future__ import annotations

import math

import numpy as np

from ... import dtypes as dt
from ... import graph as g
from ... import symbolic as sm
from ...ops import indexing as I
from ...ops import movement as M
from ...tensor import Tensor, _float, full, iota, where
from .registry import CONVERTERS, UnsupportedOpError, _t, aten

# ------------------------------------------------------------------------------------------------
# movement

@aten("view.default", "_unsafe_view.default", "reshape.default", "view_copy.default", "_reshape_copy.default")
def _view(x, shape):
    return x.reshape(list(shape))


@aten("permute.default", "permute_copy.default")
def _permute(x, dims):
    return x.permute([d % max(x.ndim, 1) for d in dims])


@aten("transpose.int", "transpose_copy.int")
def _transpose(x, a, b):
    return x if x.ndim < 2 else x.transpose(a, b)


@aten("expand.default", "expand_copy.default")
def _expand(x, size, implicit=False):
    return x.expand(*size)


@aten("expand_as.default")
def _expand_as(x, other):
    return x.broadcast_to(other.node.shape)


@aten("unsqueeze.default", "unsqueeze_copy.default")
def _unsqueeze(x, dim):
    return x.unsqueeze(dim)


@aten("squeeze.default", "squeeze.dim", "squeeze.dims", "squeeze_copy.dim", "squeeze_copy.dims")
def _squeeze(x, dim=None):
    if x.ndim == 0:
        return x
    if isinstance(dim, (list, tuple)) and not dim:
        return x
    return x.squeeze(dim)


@aten("flatten.using_ints")
def _flatten(x, start_dim=0, end_dim=-1):
    return x.flatten(start_dim, end_dim)


@aten("unflatten.int")
def _unflatten(x, dim, sizes):
    return x.unflatten(dim, list(sizes))


def _clamp_index(v, n, default):
    if v is None:
        return default
    if v < 0:
        v += n
    return min(max(v, 0), n)


@aten("slice.Tensor", "slice_copy.Tensor")
def _slice(x, dim=0, start=None, end=None, step=1):
    dim %= x.ndim
    n = x.shape[dim]
    s, e = _clamp_index(start, n, 0), _clamp_index(end, n, n)
    if s == 0 and e == n and step == 1:
        return x
    e = max(e, s)
    return M._slice_axis(x, dim, s, e, step)


@aten("unfold.default", "unfold_copy.default")
def _unfold(x, dimension, size, step):
    """Tensor.unfold: axis `dimension` becomes its windows (start w * step), each window's `size`
    elements a new last axis — a view (ViT's patches)."""
    if x.ndim == 0:
        return x.reshape([1])
    dim = dimension % x.ndim
    y = M._view(x, lambda v: v.unfold(dim, size, step))
    order = [a for a in range(y.ndim) if a != dim + 1] + [dim + 1]
    return y.permute(order)


@aten("select.int", "select_copy.int")
def _select(x, dim, index):
    dim %= x.ndim
    n = x.shape[dim]
    index = index + n if index < 0 else index
    return M._slice_axis(x, dim, index, index + 1, 1).squeeze(dim)


@aten("narrow.default")
def _narrow(x, dim, start, length):
    return x.narrow(dim, start, length)


@aten("cat.default", "concat.default")
def _cat(tensors, dim=0):
    tensors = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)]  # torch skips legacy empty (0,)
    return M.concat(tensors, dim)


@aten("stack.default")
def _stack(tensors, dim=0):
    return M.stack(list(tensors), dim)


@aten("split.Tensor", "split_copy.Tensor")
def _split(x, split_size, dim=0):
    return x.split(split_size, dim)


@aten("split_with_sizes.default", "split_with_sizes_copy.default")
def _split_sizes(x, sizes, dim=0):
    return x.split(list(sizes), dim)


@aten("chunk.default")
def _chunk(x, chunks, dim=0):
    return x.chunk(chunks, dim)


@aten("unbind.int")
def _unbind(x, dim=0):
    return x.unbind(dim)


@aten("flip.default")
def _flip(x, dims):
    return x.flip(list(dims))


@aten("roll.default")
def _roll(x, shifts, dims=()):
    return x.roll(list(shifts), list(dims) if dims else None)


@aten("repeat.default")
def _repeat(x, repeats):
    return x.repeat(*repeats)


@aten("constant_pad_nd.default")
def _constant_pad(x, pad, value=0):
    return x.pad(list(pad), value)


def _pad_indices(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """Source positions of a reflect / replicate / circular padded axis (constant index tables)."""
    pos = np.arange(-lo, n + hi)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise UnsupportedOpError(f"reflect padding ({lo}, {hi}) must be smaller than the axis ({n})")
        pos = np.abs(pos)
        pos = np.where(pos > n - 1, 2 * (n - 1) - pos, pos)
    elif mode == "replicate":
        pos = np.clip(pos, 0, n - 1)
    elif mode == "circular":
        pos = pos % n
    else:
        raise UnsupportedOpError(f"pad mode {mode!r}")
    return pos.astype(np.int32)


def _pad_gather(x, pad, mode):
    pad = list(pad)
    for k in range(len(pad) // 2):
        a = x.ndim - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        if lo < 0 or hi < 0:
            raise UnsupportedOpError(f"negative {mode} padding {tuple(pad)}")
        if lo or hi:
            x = I.index_select(x, a, Tensor(g.data_node(_pad_indices(x.shape[a], lo, hi, mode))))
    return x


@aten("pad.default")
def _pad(x, pad, mode="constant", value=None):
    if mode == "constant":
        return x.pad(list(pad), 0 if value is None else value)
    return _pad_gather(x, pad, mode)


for _nd in (1, 2, 3):
    CONVERTERS[f"reflection_pad{_nd}d.default"] = lambda x, pad: _pad_gather(x, pad, "reflect")
    CONVERTERS[f"replication_pad{_nd}d.default"] = lambda x, pad: _pad_gather(x, pad, "replicate")
CONVERTERS["_pad_circular.default"] = lambda x, pad: _pad_gather(x, pad, "circular")


@aten("diagonal.default", "diagonal_copy.default")
def _diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal as a gather: the two axes move last and are indexed by constant aranges."""
    d1, d2 = dim1 % x.ndim, dim2 % x.ndim
    rest = [a for a in range(x.ndim) if a not in (d1, d2)]
    xm = x.permute(rest + [d1, d2])
    n1, n2 = x.shape[d1], x.shape[d2]
    rows = np.arange(max(0, -offset), n1)
    rows = rows[rows + offset < n2]
    i = Tensor(g.data_node(rows.astype(np.int32)))
    j = Tensor(g.data_node((rows + offset).astype(np.int32)))
    return _index(xm, [None] * len(rest) + [i, j])


@aten("index_select.default")
def _index_select(x, dim, index):
    return I.index_select(x, dim, index)


@aten("gather.default")
def _gather(x, dim, index, sparse_grad=False):
    return I.gather(x, dim, index)


@aten("embedding.default")
def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return I.embedding(indices, weight)


@aten("index.Tensor", "_unsafe_index.Tensor")
def _index(x, indices):
    """Advanced indexing x[i0, i1, ...] with integer index tensors (None = a full slice), all index
    tensors broadcast together; as numpy/torch, the indexed dims are replaced in place by the
    broadcast shape when they are adjacent, otherwise moved to the front."""
    indices = list(indices) + [None] * (x.ndim - len(indices))
    pos = [k for k, t in enumerate(indices) if t is not None]
    if not pos:
        return x
    for k in pos:
        if indices[k].dtype.is_bool:
            raise UnsupportedOpError("boolean mask indexing gives a data-dependent shape (use torch.where)")
    from ...tensor import broadcast_shapes
    idx = [I._wrap_negative(I._int_index(indices[k]), x.node.shape[k]) for k in pos]
    bshape = broadcast_shapes(*[t.node.shape for t in idx])
    idx = [t.broadcast_to(bshape) for t in idx]
    shape = list(x.node.shape)
    adjacent = pos == list(range(pos[0], pos[-1] + 1))
    rest = [k for k in range(x.ndim) if k not in pos]
    if adjacent:
        before, after = [k for k in rest if k < pos[0]], [k for k in rest if k > pos[-1]]
        layout = [("d", k) for k in before] + [("b", None)] + [("d", k) for k in after]
    else:
        layout = [("b", None)] + [("d", k) for k in rest]
    out_shape, where_b = [], 0
    for kind, k in layout:
        if kind == "b":
            where_b = len(out_shape)
            out_shape += list(bshape)
        else:
            out_shape.append(shape[k])
    strides, acc = [], sm.ONE
    for s in reversed(shape):
        strides.append(acc)
        acc = acc * s
    strides = strides[::-1]
    nb = len(bshape)
    flat, col = None, 0
    for kind, k in layout:
        if kind == "b":
            for t, kk in zip(idx, pos):
                term = t.reshape([1] * where_b + list(bshape) + [1] * (len(out_shape) - where_b - nb)) * I._int(strides[kk])
                flat = term if flat is None else flat + term
            col += nb
        else:
            term = iota(out_shape, col) * I._int(strides[k])
            flat = term if flat is None else flat + term
            col += 1
    flat = flat.broadcast_to(out_shape)
    return Tensor(g.gather_node(x.node, flat.node))


@aten("slice_scatter.default")
def _slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    """x with src written into x[start:end:step] along dim: src is dilated (step) and padded to x's
    shape (views), and a mask of the same views selects it."""
    dim %= x.ndim
    n = x.shape[dim]
    s = _clamp_index(start, n, 0)
    src = _t(src).cast(x.dtype)
    m = src.shape[dim]
    if m == 0:
        return x

    def place(t):
        if step > 1:
            t = Tensor(g.apply_view(t.node, lambda v: v.dilate(dim, step)))
        span = t.shape[dim]
        per = [(0, 0)] * x.ndim
        per[dim] = (s, n - s - span)
        return M.pad_axes(t, per)
    mask = place(full(src.node.shape, True, dt.bool_))
    return where(mask, place(src), x)


@aten("select_scatter.default")
def _select_scatter(x, src, dim, index):
    dim %= x.ndim
    index = index + x.shape[dim] if index < 0 else index
    return _slice_scatter(x, _t(src).unsqueeze(dim), dim, index, index + 1, 1)


def _upsample_args(x, output_size, scales, nd):
    """Output sizes and per-axis scale factors (None where torch was given a size) of an upsample
    op: `.vec` overloads pass a list of factors, the others one optional factor per axis."""
    sizes = list(x.shape[x.ndim - nd:])
    if len(scales) == 1 and (scales[0] is None or isinstance(scales[0], (list, tuple))):
        factors = list(scales[0]) if scales[0] is not None else [None] * nd
    else:
        factors = list(scales) + [None] * (nd - len(scales))
    if output_size is None:
        output_size = [int(math.floor(n * f)) for n, f in zip(sizes, factors)]
    return sizes, list(output_size), factors


def _src_ratio(n, o, factor, align_corners):
    if align_corners:
        return (n - 1) / (o - 1) if o > 1 else 0.0
    return 1.0 / factor if factor else n / o


def _upsample_nearest(nd):
    def conv(x, output_size, *scales):
        sizes, out, factors = _upsample_args(x, output_size, scales, nd)
        for i, (n, o, f) in enumerate(zip(sizes, out, factors)):
            a = x.ndim - nd + i
            r = _src_ratio(n, o, f, False)
            idx = np.minimum(np.floor(np.arange(o) * np.float32(r)).astype(np.int64), n - 1)
            if o % n == 0 and np.array_equal(idx, np.arange(o) // (o // n)):  # integer factor: a broadcast view
                k = o // n
                shp = list(x.node.shape)
                x = x.unsqueeze(a + 1).broadcast_to(shp[:a + 1] + [k] + shp[a + 1:]).reshape(shp[:a] + [o] + shp[a + 1:])
            else:
                x = I.index_select(x, a, Tensor(g.data_node(idx.astype(np.int32))))
        return x
    return conv


def _upsample_linear(nd):
    """(bi/tri)linear interpolation, one axis at a time: two constant-index selects and a lerp with
    constant weights per axis (torch's source-index rule, align_corners either way)."""
    def conv(x, output_size, align_corners, *scales):
        sizes, out, factors = _upsample_args(x, output_size, scales, nd)
        x = _float(x)
        for i, (n, o, f) in enumerate(zip(sizes, out, factors)):
            a = x.ndim - nd + i
            r = _src_ratio(n, o, f, align_corners)
            dst = np.arange(o, dtype=np.float64)
            src = dst * r if align_corners else np.maximum((dst + 0.5) * r - 0.5, 0.0)
            i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
            i1 = np.minimum(i0 + 1, n - 1)
            w = (src - i0).astype(np.float32)
            lo = I.index_select(x, a, Tensor(g.data_node(i0.astype(np.int32))))
            hi = I.index_select(x, a, Tensor(g.data_node(i1.astype(np.int32))))
            wt = Tensor(g.data_node(w.reshape([o] + [1] * (x.ndim - a - 1)))).cast(x.dtype)
            x = lo + (hi - lo) * wt
        return x
    return conv


for _nd, _nm in ((1, "1d"), (2, "2d"), (3, "3d")):
    CONVERTERS[f"upsample_nearest{_nm}.vec"] = CONVERTERS[f"upsample_nearest{_nm}.default"] = _upsample_nearest(_nd)
CONVERTERS["upsample_linear1d.vec"] = CONVERTERS["upsample_linear1d.default"] = _upsample_linear(1)
CONVERTERS["upsample_bilinear2d.vec"] = CONVERTERS["upsample_bilinear2d.default"] = _upsample_linear(2)
CONVERTERS["upsample_trilinear3d.vec"] = CONVERTERS["upsample_trilinear3d.default"] = _upsample_linear(3)
