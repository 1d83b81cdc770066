"""Gathers: embedding lookup, index_select, torch-style gather, one_hot, triangular masks.

All of them compute flat positions with integer arithmetic (iota, mul, add) and read them with the
GATHER primitive: ``out[i] = flat(data)[index[i]]``.
"""
from __future__ import annotations

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..tensor import ShapeError, Tensor, iota, tensor_method, where, zeros_like
from ..tensor import normalize_axis as _axis

__all__ = ["gather", "index_select", "embedding", "take", "one_hot", "tril", "triu", "masked_fill"]


def _int_index(index: Tensor) -> Tensor:
    if not isinstance(index, Tensor):
        from ..tensor import tensor
        index = tensor(index)
    if index.dtype.is_float or index.dtype.is_bool:
        raise TypeError(f"index tensors must be integers, got {index.dtype.name}")
    return index if index.dtype == dt.int32 else index.cast(dt.int32)


def _wrap_negative(index: Tensor, n) -> Tensor:
    """Python-style negative indices count from the end."""
    n_t = n.value if n.is_const else Tensor(g.iota_node((), n, dt.int32))
    return where(index < 0, index + n_t, index)


def _poison_out_of_range(flat: Tensor, index: Tensor, n, axis: int) -> Tensor:
    """Flat positions whose per-axis index (already wrapped) lies outside [0, n) become -1, which
    no buffer holds, so evaluation fails loudly instead of reading a neighbouring row. Along axis 0
    an out-of-range index already lands outside the flat buffer, so no check is added there."""
    if axis == 0:
        return flat
    n_t = n.value if n.is_const else Tensor(g.iota_node((), n, dt.int32))
    ok = (index >= 0) & (index < n_t)
    return where(ok, flat, -1)


@tensor_method
def take(x: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened x at `index` (output has index's shape)."""
    index = _wrap_negative(_int_index(index), x.node.numel)
    return Tensor(g.gather_node(x.node, index.node))


@tensor_method
def index_select(x: Tensor, axis: int, index: Tensor) -> Tensor:
    """Slices of x along `axis` picked by the 1-D integer `index`."""
    a = _axis(axis, x.ndim)
    index = _wrap_negative(_int_index(index), x.node.shape[a])
    if index.ndim != 1:
        raise ShapeError(f"index_select needs a 1-D index, got shape {index.shape}")
    shape = list(x.node.shape)
    out_shape = shape[:a] + [index.node.shape[0]] + shape[a + 1:]
    strides = []
    acc = sm.ONE
    for s in reversed(shape):
        strides.append(acc)
        acc = acc * s
    strides = strides[::-1]
    flat = None
    for d in range(len(shape)):
        if d == a:
            term = index.reshape([1] * a + [-1] + [1] * (len(shape) - a - 1)) * _int(strides[d])
        else:
            term = iota(out_shape, d) * _int(strides[d])
        flat = term if flat is None else flat + term
    flat = flat.broadcast_to(out_shape)
    flat = _poison_out_of_range(flat, index.reshape([1] * a + [-1] + [1] * (len(shape) - a - 1)), shape[a], a)
    return Tensor(g.gather_node(x.node, flat.broadcast_to(out_shape).node))


def _int(e):
    return e.value if e.is_const else Tensor(g.iota_node((), e, dt.int32))


def embedding(indices: Tensor, table: Tensor) -> Tensor:
    """Rows of table (V, D) for integer indices of any shape -> indices.shape + (D,)."""
    if table.ndim != 2:
        raise ShapeError(f"embedding table must be 2-D (vocab, dim), got {table.shape}")
    indices = _int_index(indices)
    out = index_select(table, 0, indices.reshape(-1))
    return out.reshape(list(indices.node.shape) + [table.node.shape[1]])


@tensor_method(name="gather")
def gather(x: Tensor, axis: int, index: Tensor) -> Tensor:
    """torch.gather: out[i][j][k] = x[index[i][j][k]][j][k] for axis 0 (and likewise)."""
    a = _axis(axis, x.ndim)
    index = _int_index(index)
    if index.ndim != x.ndim:
        raise ShapeError(f"gather: index rank {index.ndim} differs from input rank {x.ndim}")
    for d, (si, sx) in enumerate(zip(index.node.shape, x.node.shape)):
        if d != a and si.is_const and sx.is_const and si.value > sx.value:
            raise ShapeError(f"gather: index shape {index.shape} exceeds input shape {x.shape} at axis {d} "
                             f"(only the gathered axis {a} may be larger)")
    index = _wrap_negative(index, x.node.shape[a])
    shape = list(x.node.shape)
    out_shape = list(index.node.shape)
    strides, acc = [], sm.ONE
    for s in reversed(shape):
        strides.append(acc)
        acc = acc * s
    strides = strides[::-1]
    flat = None
    for d in range(len(shape)):
        term = (index if d == a else iota(out_shape, d)) * _int(strides[d])
        flat = term if flat is None else flat + term
    flat = _poison_out_of_range(flat, index, shape[a], a)
    return Tensor(g.gather_node(x.node, flat.node))


def one_hot(index: Tensor, num_classes: int, dtype=dt.float32) -> Tensor:
    index = _int_index(index)
    classes = iota(list(index.node.shape) + [num_classes], index.ndim)
    return (classes == index.unsqueeze(-1)).cast(dtype)


def _tri_mask(shape, k: int, lower: bool) -> Tensor:
    r, c = iota(shape, -2), iota(shape, -1)
    return (c - r <= k) if lower else (c - r >= k)


@tensor_method
def tril(x: Tensor, k: int = 0) -> Tensor:
    return where(_tri_mask(x.node.shape, k, True), x, zeros_like(x))  # zeros of x's dtype (bool stays bool)


@tensor_method
def triu(x: Tensor, k: int = 0) -> Tensor:
    return where(_tri_mask(x.node.shape, k, False), x, zeros_like(x))


@tensor_method
def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    return where(mask, value, x)
