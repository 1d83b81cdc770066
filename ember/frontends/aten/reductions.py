"""ATen reductions: sum/mean/max/min/arg*, variance, norms, cumsum, softmax and log-softmax."""
from __future__ import annotations

import math

from ... import dtypes as dt
from ...tensor import _float
from ...tensor import pow as em_pow
from .registry import _dims, _dtype, aten

# ------------------------------------------------------------------------------------------------
# reductions

@aten("sum.default", "sum.dim_IntList")
def _sum(x, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        x = x.cast(_dtype(dtype))
    if x.ndim == 0:
        return x.cast(dt.int32) if x.dtype.is_bool else x
    return x.sum(_dims(x, dim), keepdim)


@aten("mean.default", "mean.dim")
def _mean(x, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        x = x.cast(_dtype(dtype))
    if x.ndim == 0:
        return x
    return x.mean(_dims(x, dim), keepdim)


@aten("amax.default")
def _amax(x, dim=(), keepdim=False):
    return x if x.ndim == 0 else x.max(_dims(x, dim), keepdim)


@aten("amin.default")
def _amin(x, dim=(), keepdim=False):
    return x if x.ndim == 0 else x.min(_dims(x, dim), keepdim)


@aten("max.default")
def _max_all(x):
    return x if x.ndim == 0 else x.max()


@aten("min.default")
def _min_all(x):
    return x if x.ndim == 0 else x.min()


@aten("max.dim")
def _max_dim(x, dim, keepdim=False):
    return x.max(dim, keepdim), x.argmax(dim, keepdim)


@aten("min.dim")
def _min_dim(x, dim, keepdim=False):
    return x.min(dim, keepdim), x.argmin(dim, keepdim)


@aten("max.other")
def _max_other(a, b):
    return a.maximum(b)


@aten("min.other")
def _min_other(a, b):
    return a.minimum(b)


@aten("argmax.default")
def _argmax(x, dim=None, keepdim=False):
    if dim is None and keepdim:
        return x.reshape(-1).argmax(0).reshape([1] * x.ndim)
    return x.argmax(dim, keepdim)


@aten("argmin.default")
def _argmin(x, dim=None, keepdim=False):
    if dim is None and keepdim:
        return x.reshape(-1).argmin(0).reshape([1] * x.ndim)
    return x.argmin(dim, keepdim)


def _correction(correction, unbiased):
    if correction is not None:
        return correction
    return 1 if unbiased in (None, True) else 0


@aten("var.correction", "var.dim", "var.default")
def _var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):  # var.default(x, unbiased)
        dim, unbiased = None, dim
    return x.var(_dims(x, dim), keepdim=keepdim, correction=_correction(correction, unbiased))


@aten("std.correction", "std.dim", "std.default")
def _std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return x.std(_dims(x, dim), keepdim=keepdim, correction=_correction(correction, unbiased))


@aten("var_mean.correction", "var_mean.dim")
def _var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    axes = _dims(x, dim)
    return x.var(axes, keepdim=keepdim, correction=_correction(correction, unbiased)), x.mean(axes, keepdim)


@aten("std_mean.correction", "std_mean.dim")
def _std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    axes = _dims(x, dim)
    return x.std(axes, keepdim=keepdim, correction=_correction(correction, unbiased)), x.mean(axes, keepdim)


@aten("prod.default", "prod.dim_int")
def _prod(x, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        x = x.cast(_dtype(dtype))
    if isinstance(dim, int) and not isinstance(dim, bool):
        return x.prod(dim, keepdim)
    return x.prod()


@aten("logsumexp.default")
def _logsumexp(x, dim, keepdim=False):
    return x.logsumexp(_dims(x, dim), keepdim)


@aten("any.default", "any.dim", "any.dims")
def _any(x, dim=None, keepdim=False):
    return x.any(_dims(x, dim) if x.ndim else None, keepdim) if x.ndim else x.bool()


@aten("all.default", "all.dim", "all.dims")
def _all(x, dim=None, keepdim=False):
    return x.all(_dims(x, dim) if x.ndim else None, keepdim) if x.ndim else x.bool()


@aten("cumsum.default")
def _cumsum(x, dim, *, dtype=None):
    if dtype is not None:
        x = x.cast(_dtype(dtype))
    return x.cumsum(dim)


@aten("cumprod.default")
def _cumprod(x, dim, *, dtype=None):
    if dtype is not None:
        x = x.cast(_dtype(dtype))
    return x.cumprod(dim)


@aten("linalg_vector_norm.default", "norm.Scalar", "norm.ScalarOpt_dim")
def _vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        x = x.cast(_dtype(dtype))
    x = _float(x)
    axes = _dims(x, dim)
    ord = 2 if ord is None else float(ord)
    a = x.abs()
    if ord == math.inf:
        return a.max(axes, keepdim)
    if ord == -math.inf:
        return a.min(axes, keepdim)
    if ord == 0:
        return (a != 0).cast(x.dtype).sum(axes, keepdim)
    if ord == 1:
        return a.sum(axes, keepdim)
    if ord == 2:
        return (x * x).sum(axes, keepdim).sqrt()
    return em_pow(em_pow(a, ord).sum(axes, keepdim), 1.0 / ord)


@aten("_softmax.default", "softmax.int", "_safe_softmax.default")
def _softmax(x, dim, half_to_float=False, *, dtype=None):
    if isinstance(half_to_float, bool) and half_to_float:
        x = x.cast(dt.float32)
    elif not isinstance(half_to_float, bool) and half_to_float is not None:  # softmax.int(x, dim, dtype)
        x = x.cast(_dtype(half_to_float))
    if dtype is not None:
        x = x.cast(_dtype(dtype))
    return x.softmax(dim)


@aten("_log_softmax.default", "log_softmax.int")
def _log_softmax(x, dim, half_to_float=False, *, dtype=None):
    if isinstance(half_to_float, bool) and half_to_float:
        x = x.cast(dt.float32)
    elif not isinstance(half_to_float, bool) and half_to_float is not None:
        x = x.cast(_dtype(half_to_float))
    if dtype is not None:
        x = x.cast(_dtype(dtype))
    return x.log_softmax(dim)
