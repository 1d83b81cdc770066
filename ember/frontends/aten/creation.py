"""ATen ops that create tensors: full/zeros/ones/arange/..., their *_like forms, triangles and fills."""
from __future__ import annotations

from ... import dtypes as dt
from ...ops import indexing as I
from ...tensor import Tensor, full, where
from .registry import _dtype, _t, aten

# ------------------------------------------------------------------------------------------------
# construction

def _full(size, value, dtype=None):
    d = _dtype(dtype) if dtype is not None else dt.scalar_dtype(value)
    if d.is_bool:
        value = bool(value)
    return full(tuple(size), value, d)


@aten("full.default")
def _full_op(size, fill_value, *, dtype=None, **kw):
    return _full(size, fill_value, dtype)


@aten("zeros.default")
def _zeros(size, *, dtype=None, **kw):
    return _full(size, 0.0 if dtype is None else 0, dtype or "float32")


@aten("ones.default")
def _ones(size, *, dtype=None, **kw):
    return _full(size, 1.0 if dtype is None else 1, dtype or "float32")


@aten("empty.memory_format", "empty.default", "empty_strided.default")
def _empty(size, *args, dtype=None, **kw):
    # uninitialised in torch; zeros is one valid value (a model that reads it is undefined anyway)
    return _full(size, 0, dtype or "float32")


@aten("scalar_tensor.default")
def _scalar_tensor(v, *, dtype=None, **kw):
    return _full((), v, dtype or "float32")


@aten("full_like.default")
def _full_like(x, value, *, dtype=None, **kw):
    return full(x.node.shape, value, _dtype(dtype) if dtype is not None else x.dtype)


@aten("zeros_like.default", "empty_like.default")
def _zeros_like(x, *, dtype=None, **kw):
    return _full_like(x, 0, dtype=dtype)


@aten("ones_like.default")
def _ones_like(x, *, dtype=None, **kw):
    return _full_like(x, 1, dtype=dtype)


@aten("new_zeros.default", "new_empty.default", "new_empty_strided.default")
def _new_zeros(x, size, *args, dtype=None, **kw):
    return full(tuple(size), 0, _dtype(dtype) if dtype is not None else x.dtype)


@aten("new_ones.default")
def _new_ones(x, size, *, dtype=None, **kw):
    return full(tuple(size), 1, _dtype(dtype) if dtype is not None else x.dtype)


@aten("new_full.default")
def _new_full(x, size, value, *, dtype=None, **kw):
    return full(tuple(size), value, _dtype(dtype) if dtype is not None else x.dtype)


@aten("fill.Scalar", "fill.Tensor")
def _fill(x, value):
    return where(full(x.node.shape, True, dt.bool_), _t(value).cast(x.dtype), x) if isinstance(value, Tensor) \
        else full(x.node.shape, value, x.dtype)


@aten("arange.default", "arange.start", "arange.start_step")
def _arange(*args, dtype=None, **kw):
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    from ...tensor import arange
    d = _dtype(dtype) if dtype is not None else None
    return arange(start, end, step, dtype=d)


@aten("tril.default")
def _tril(x, diagonal=0):
    return I.tril(x, diagonal)


@aten("triu.default")
def _triu(x, diagonal=0):
    return I.triu(x, diagonal)


@aten("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(x, mask, value):
    return where(mask, _t(value).cast(x.dtype) if isinstance(value, Tensor) else value, x)
