"""ATen ops -> Ember's Tensor API: one converter per op, kept as data in `CONVERTERS`.

Each converter takes the op's arguments with every FX node already replaced by its Ember value (a
`Tensor`, a Python number, or a list/tuple of them) and returns an Ember value of the same structure
as the ATen op's result. The importer (`pytorch.py`) checks every result's shape against the shape
torch recorded for that node and casts it to torch's dtype, so a converter may compute in a wider
type (Ember's own promotion) without changing the answer's dtype.

Integer policy: Ember indexes with int32. torch's int64 tensors become int32 inside the graph (the
importer narrows int64 inputs at the boundary and widens int64 outputs back), so `_dtype` maps
torch.int64 to em.int32.

Register a converter with ``@aten("add.Tensor", "add.Scalar")``; keys are ``packet.overload`` names
(``relu.default``). Ops without a converter are decomposed by torch (core ATen decompositions)
before import; what is left unconverted is an `UnsupportedOpError`.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..ops import attention as A
from ..ops import conv as C
from ..ops import indexing as I
from ..ops import linalg as L
from ..ops import loss as LS
from ..ops import movement as M
from ..ops import norm as N
from ..tensor import Tensor, _as_tensor, _divide_rounded, _float, _operands, full, iota, where
from ..tensor import pow as em_pow

CONVERTERS: dict[str, Callable] = {}


class UnsupportedOpError(NotImplementedError):
    """An ATen op (or an argument value of one) that Ember cannot import. The message names the op
    and where it is in the model."""


class Unsupported:
    """A value Ember cannot produce (e.g. max_pool's indices). Harmless while unused; any op that
    reads it, or a model output that is it, raises UnsupportedOpError with `why`."""

    def __init__(self, why: str):
        self.why = why


def aten(*names: str):
    def deco(fn):
        for n in names:
            CONVERTERS[n if "." in n else n + ".default"] = fn
        return fn
    return deco


def _dtype(torch_dtype):
    """Ember dtype for a torch dtype, with the int64 -> int32 narrowing (see module docstring)."""
    if torch_dtype is None:
        return None
    name = str(torch_dtype).replace("torch.", "")
    if name in ("int64", "int16", "int8", "uint8"):
        return dt.int32
    try:
        return dt.as_dtype(name)
    except TypeError:
        raise UnsupportedOpError(f"torch dtype {torch_dtype} has no Ember equivalent") from None


def _t(x, like: Tensor | None = None) -> Tensor:
    """A Tensor from a Tensor or a Python number (numbers take like's dtype category rules)."""
    if isinstance(x, Tensor):
        return x
    return _as_tensor(x, None if like is None else dt.promote_with_scalar(like.dtype, x))


def _dims(x: Tensor, dim) -> tuple:
    """Reduction axes as ATen gives them: None or [] means all axes."""
    if dim is None:
        return tuple(range(x.ndim))
    if isinstance(dim, int):
        dim = [dim]
    dim = list(dim)
    if not dim:
        return tuple(range(x.ndim))
    return tuple(d % max(x.ndim, 1) for d in dim)


# ------------------------------------------------------------------------------------------------
# no-ops and identities

@aten("clone.default", "alias.default", "contiguous.default", "lift_fresh_copy.default", "detach.default",
      "detach_.default", "alias_copy.default", "detach_copy.default", "lift.default")
def _identity(x, *args, **kw):
    return x


@aten("_assert_tensor_metadata.default", "_assert_async.default", "_assert_async.msg", "_assert_scalar.default",
      "sym_constrain_range_for_size.default", "sym_constrain_range.default", "_functional_assert_async.msg",
      "_print.default", "record_stream.default")
def _noop(*args, **kw):
    return None


@aten("_to_copy.default", "to.dtype", "to.dtype_layout", "to.device", "to.other", "_to_dim_order_copy.default",
      "type_as.default")
def _to_copy(x, *args, dtype=None, **kw):
    if args and isinstance(args[0], Tensor):  # to.other / type_as
        return x.cast(args[0].dtype)
    for a in args:  # positional dtype (to.dtype(x, dtype, ...)); devices and bools are skipped
        if type(a).__name__ == "dtype":
            dtype = a
            break
    return x if dtype is None else x.cast(_dtype(dtype))


@aten("copy.default")
def _copy(dst, src, non_blocking=False):
    return _t(src).cast(dst.dtype).broadcast_to(dst.node.shape)


# ------------------------------------------------------------------------------------------------
# elementwise arithmetic

# Python operators do the work: a number on the left defers to the Tensor's reflected operator.

@aten("add.Tensor", "add.Scalar")
def _add(a, b, alpha=1):
    return a + (b * alpha if alpha != 1 else b)


@aten("sub.Tensor", "sub.Scalar")
def _sub(a, b, alpha=1):
    return a - (b * alpha if alpha != 1 else b)


@aten("rsub.Tensor", "rsub.Scalar")
def _rsub(a, b, alpha=1):
    return b - (a * alpha if alpha != 1 else a)


@aten("mul.Tensor", "mul.Scalar")
def _mul(a, b):
    return a * b


@aten("div.Tensor", "div.Scalar")
def _div(a, b):
    return a / b


@aten("div.Tensor_mode", "div.Scalar_mode")
def _div_mode(a, b, rounding_mode=None):
    if rounding_mode is None:
        return a / b
    return _divide_rounded(*_operands(a, b), rounding_mode)  # integers stay integral


@aten("floor_divide.default", "floor_divide.Scalar")
def _floordiv(a, b):
    return _div_mode(a, b, "floor")


@aten("remainder.Tensor", "remainder.Scalar", "remainder.Scalar_Tensor")
def _remainder(a, b):
    return a % b


@aten("fmod.Tensor", "fmod.Scalar")
def _fmod(a, b):
    return a.fmod(b)


@aten("neg.default")
def _neg(x):
    return -x


@aten("abs.default")
def _abs(x):
    return x.abs()


@aten("sign.default", "sgn.default")
def _sign(x):
    return x.sign()


@aten("pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar")
def _pow(a, b):
    return em_pow(a, b)


@aten("square.default")
def _square(x):
    return x * x


def _unary(method: str):
    def conv(x, *args, **kw):
        return getattr(_t(x), method)()
    return conv


for _name, _method in {
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
    "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "reciprocal": "reciprocal", "sin": "sin",
    "cos": "cos", "tan": "tan", "tanh": "tanh", "sigmoid": "sigmoid", "erf": "erf", "floor": "floor",
    "ceil": "ceil", "trunc": "trunc", "isnan": "isnan", "isinf": "isinf", "relu": "relu", "silu": "silu",
    "hardswish": "hardswish", "hardsigmoid": "hardsigmoid", "mish": "mish", "logical_not": "logical_not",
    "bitwise_not": "logical_not", "relu6": "relu6", "selu": "selu", "softsign": "softsign",
    "isfinite": "isfinite",
}.items():
    CONVERTERS[f"{_name}.default"] = _unary(_method)


@aten("round.default", "round.decimals")
def _round(x, decimals=0):
    if decimals:
        s = 10.0 ** decimals
        return (x * s).round() * (1.0 / s)
    return x.round()


@aten("sinh.default")
def _sinh(x):
    e = _float(x).exp()
    return (e - e.reciprocal()) * 0.5


@aten("cosh.default")
def _cosh(x):
    e = _float(x).exp()
    return (e + e.reciprocal()) * 0.5


@aten("frac.default")
def _frac(x):
    return x - x.trunc()


@aten("gelu.default")
def _gelu(x, approximate="none"):
    return x.gelu(approximate)


@aten("leaky_relu.default")
def _leaky_relu(x, negative_slope=0.01):
    return x.leaky_relu(negative_slope)


@aten("hardtanh.default")
def _hardtanh(x, min_val=-1.0, max_val=1.0):
    return x.hardtanh(min_val, max_val)


@aten("elu.default")
def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    x = _float(x)
    xi = x * input_scale if input_scale != 1.0 else x
    y = where(x > 0, x, (xi.exp() - 1.0) * alpha)
    return y * scale if scale != 1.0 else y


@aten("celu.default")
def _celu(x, alpha=1.0):
    return _elu(x, alpha, 1.0, 1.0 / alpha)


@aten("softplus.default")
def _softplus(x, beta=1.0, threshold=20.0):
    return x.softplus(beta, threshold)


@aten("log_sigmoid_forward.default")
def _log_sigmoid_forward(x):
    return x.logsigmoid(), Unsupported("the buffer output of log_sigmoid_forward")


@aten("rrelu_with_noise_functional.default")
def _rrelu(x, noise, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if training:
        raise UnsupportedOpError(_RANDOM_WHY)
    return x.leaky_relu((lower + upper) / 2), noise


@aten("threshold.default")
def _threshold(x, threshold, value):
    return where(x > threshold, x, value)


@aten("hardshrink.default")
def _hardshrink(x, lambd=0.5):
    return where(x.abs() > lambd, x, 0.0)


@aten("softshrink.default")
def _softshrink(x, lambd=0.5):
    return where(x > lambd, x - lambd, where(x < -lambd, x + lambd, 0.0))


@aten("glu.default")
def _glu(x, dim=-1):
    a, b = x.chunk(2, dim)
    return a * b.sigmoid()


@aten("prelu.default", "_prelu_kernel.default")
def _prelu(x, w):
    if w.ndim == 1 and x.ndim >= 2 and w.shape[0] != 1:
        w = w.reshape([1, w.shape[0]] + [1] * (x.ndim - 2))
    return where(x > 0, x, x * w)


@aten("clamp.default", "clamp.Tensor")
def _clamp(x, min=None, max=None):
    return x.clamp(min, max)


@aten("clamp_min.default", "clamp_min.Tensor")
def _clamp_min(x, min):
    return x.clamp(min, None)


@aten("clamp_max.default", "clamp_max.Tensor")
def _clamp_max(x, max):
    return x.clamp(None, max)


@aten("maximum.default")
def _maximum(a, b):
    return a.maximum(b)


@aten("minimum.default")
def _minimum(a, b):
    return a.minimum(b)


@aten("where.self", "where.ScalarSelf", "where.ScalarOther", "where.Scalar")
def _where(c, a, b):
    return where(c, a, b)


@aten("lerp.Scalar", "lerp.Tensor")
def _lerp(a, b, w):
    return a + (b - a) * w


@aten("addcmul.default")
def _addcmul(x, a, b, value=1):
    return x + a * b * value


@aten("addcdiv.default")
def _addcdiv(x, a, b, value=1):
    return x + a / b * value


@aten("logit.default")
def _logit(x, eps=None):
    if eps is not None:
        x = x.clamp(eps, 1.0 - eps)
    return (x / (1.0 - x)).log()


def _atan(x):
    """arctan, Cephes' single-precision scheme: reduce |x| to [0, tan(pi/8)] with pi/4 or pi/2
    offsets, then a degree-9 odd polynomial (about 1 ulp in float32)."""
    x = _float(x)
    a = x.abs()
    big, mid = a > 2.414213562373095, a > 0.4142135623730950
    safe = where(a == 0, 1.0, a)  # keeps the unused branches finite
    r = where(big, -safe.reciprocal(), where(mid, (a - 1.0) / (a + 1.0), a))
    off = where(big, math.pi / 2, where(mid, math.pi / 4, 0.0))
    z = r * r
    y = off + (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * r + r
    return where(x < 0, -y, y)


def _atan2(y, x):
    y, x = _float(_t(y)), _float(_t(x))
    base = _atan(y / where(x == 0, 1.0, x))
    res = where(x > 0, base, where(x < 0, where(y < 0, base - math.pi, base + math.pi),
                                   where(y > 0, math.pi / 2, where(y < 0, -math.pi / 2, 0.0))))
    return res


CONVERTERS["atan.default"] = lambda x: _atan(x)
CONVERTERS["atan2.default"] = _atan2
CONVERTERS["asin.default"] = lambda x: _atan2(x, (1.0 - _float(x) * x).sqrt())
CONVERTERS["acos.default"] = lambda x: _atan2((1.0 - _float(x) * x).sqrt(), x)


@aten("hypot.default")
def _hypot(a, b):
    return (_float(a) * a + _float(b) * b).sqrt()


# comparisons and logic (reflected operators handle a number on the left)
for _name, _fn in {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
                   "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}.items():
    CONVERTERS[f"{_name}.Tensor"] = CONVERTERS[f"{_name}.Scalar"] = _fn


@aten("logical_and.default", "bitwise_and.Tensor")
def _logical_and(a, b):
    return _t(a).bool() & _t(b).bool()


@aten("logical_or.default", "bitwise_or.Tensor")
def _logical_or(a, b):
    return _t(a).bool() | _t(b).bool()


@aten("logical_xor.default", "bitwise_xor.Tensor")
def _logical_xor(a, b):
    return _t(a).bool() ^ _t(b).bool()


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
    from ..tensor import arange
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


# ------------------------------------------------------------------------------------------------
# contractions

@aten("mm.default", "bmm.default", "matmul.default")
def _mm(a, b):
    return a.matmul(b)


@aten("mv.default")
def _mv(a, v):
    return a.matmul(v)


@aten("dot.default", "vdot.default")
def _dot(a, b):
    return (a * b).sum()


@aten("addmm.default", "baddbmm.default", "addmv.default")
def _addmm(bias, a, b, *, beta=1, alpha=1):
    p = a.matmul(b)
    if alpha != 1:
        p = p * alpha
    if beta == 0:
        return p
    return p + (bias * beta if beta != 1 else bias)


@aten("addbmm.default")
def _addbmm(bias, a, b, *, beta=1, alpha=1):
    p = a.matmul(b).sum(0)
    if alpha != 1:
        p = p * alpha
    return p if beta == 0 else p + (bias * beta if beta != 1 else bias)


@aten("linear.default")
def _linear(x, w, b=None):
    return L.linear(x, w, b)


@aten("t.default", "numpy_T.default")
def _t_op(x):
    return x if x.ndim < 2 else x.transpose(0, 1)


@aten("einsum.default")
def _einsum(equation, tensors, path=None):
    return L.einsum(equation, *tensors)


@aten("outer.default")
def _outer(a, b):
    return L.outer(a, b)


# ------------------------------------------------------------------------------------------------
# convolution and pooling

@aten("convolution.default")
def _convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    nd = w.ndim - 2
    unbatched = x.ndim == nd + 1
    if unbatched:
        x = x.unsqueeze(0)
    if transposed:
        y = C._conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation, nd)
    else:
        y = C._conv(x, w, b, stride, padding, dilation, groups, nd)
    return y.squeeze(0) if unbatched else y


def _pool_args(kernel, stride, nd):
    k = _rep(kernel, nd)
    empty = stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0)
    return k, (k if empty else _rep(stride, nd))


def _rep(v, nd):
    if isinstance(v, int):
        return (v,) * nd
    v = tuple(v)
    return v * nd if len(v) == 1 else v


def _max_pool(nd):
    def conv(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        k, s = _pool_args(kernel_size, stride, nd)
        y = C._pool(x, k, s, _rep(padding, nd), _rep(dilation, nd), ceil_mode, nd, "max")
        return y, Unsupported(f"the indices output of max_pool{nd}d_with_indices")
    return conv


CONVERTERS["max_pool1d_with_indices.default"] = _max_pool(1)
CONVERTERS["max_pool2d_with_indices.default"] = _max_pool(2)
CONVERTERS["max_pool3d_with_indices.default"] = _max_pool(3)


def _plain_max_pool(nd):
    def conv(*args, **kw):
        return _max_pool(nd)(*args, **kw)[0]
    return conv


CONVERTERS["max_pool1d.default"] = _plain_max_pool(1)
CONVERTERS["max_pool2d.default"] = _plain_max_pool(2)
CONVERTERS["max_pool3d.default"] = _plain_max_pool(3)


def _avg_pool(nd):
    def conv(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        k, s = _pool_args(kernel_size, stride, nd)
        return C._pool(x, k, s, _rep(padding, nd), (1,) * nd, ceil_mode, nd, "avg", count_include_pad,
                       divisor_override)
    return conv


CONVERTERS["avg_pool1d.default"] = _avg_pool(1)
CONVERTERS["avg_pool2d.default"] = _avg_pool(2)
CONVERTERS["avg_pool3d.default"] = _avg_pool(3)


def _adaptive_matrix(n: int, out: int) -> np.ndarray:
    return C._adaptive_matrix(n, out)


def _adaptive_avg(nd):
    """torch's adaptive windows: an average pool when every size divides, otherwise one small
    constant contraction per spatial axis."""
    def conv(x, output_size):
        out = _rep(output_size, nd)
        sizes = x.shape[x.ndim - nd:]
        x = _float(x)
        if all(n % o == 0 for n, o in zip(sizes, out)):
            k = tuple(n // o for n, o in zip(sizes, out))
            return C._pool(x, k, k, (0,) * nd, (1,) * nd, False, nd, "avg")
        for i, (n, o) in enumerate(zip(sizes, out)):
            a = x.ndim - nd + i
            m = Tensor(g.data_node(_adaptive_matrix(n, o))).cast(x.dtype)  # (o, n)
            x = x.movedim(a, -1).matmul(m.transpose(0, 1)).movedim(-1, a)
        return x
    return conv


CONVERTERS["_adaptive_avg_pool2d.default"] = _adaptive_avg(2)
CONVERTERS["adaptive_avg_pool2d.default"] = _adaptive_avg(2)
CONVERTERS["_adaptive_avg_pool3d.default"] = _adaptive_avg(3)
CONVERTERS["adaptive_avg_pool1d.default"] = _adaptive_avg(1)


def _adaptive_max(nd):
    def conv(x, output_size):
        out = _rep(output_size, nd)
        sizes = x.shape[x.ndim - nd:]
        if not all(n % o == 0 for n, o in zip(sizes, out)):
            raise UnsupportedOpError(f"adaptive_max_pool{nd}d with output {out} that does not divide the input "
                                     f"{tuple(sizes)} (only evenly dividing windows are supported)")
        k = tuple(n // o for n, o in zip(sizes, out))
        y = C._pool(x, k, k, (0,) * nd, (1,) * nd, False, nd, "max")
        return y, Unsupported(f"the indices output of adaptive_max_pool{nd}d")
    return conv


CONVERTERS["adaptive_max_pool2d.default"] = _adaptive_max(2)
CONVERTERS["adaptive_max_pool1d.default"] = _adaptive_max(1)
CONVERTERS["adaptive_max_pool3d.default"] = _adaptive_max(3)


# ------------------------------------------------------------------------------------------------
# normalisation

def _cdt(x):
    return x.dtype if x.dtype in (dt.float32, dt.float64) else dt.float32


@aten("native_layer_norm.default")
def _native_layer_norm(x, normalized_shape, weight, bias, eps):
    y = N.layer_norm(x, list(normalized_shape), weight, bias, eps)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    xf = x.cast(_cdt(x))
    mu = xf.mean(axes, keepdim=True)
    d = xf - mu
    rstd = ((d * d).mean(axes, keepdim=True) + eps).rsqrt()
    return y, mu, rstd


@aten("layer_norm.default")
def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return N.layer_norm(x, list(normalized_shape), weight, bias, eps)


@aten("rms_norm.default")
def _rms_norm(x, normalized_shape, weight=None, eps=None):
    return N.rms_norm(x, list(normalized_shape), weight, eps)


@aten("native_group_norm.default")
def _native_group_norm(x, weight, bias, n, c, hxw, group, eps):
    y = N.group_norm(x, group, weight, bias, eps)
    xg = x.cast(_cdt(x)).reshape(n, group, -1)
    mu = xg.mean(2, keepdim=True)
    d = xg - mu
    rstd = ((d * d).mean(2, keepdim=True) + eps).rsqrt()
    return y, mu.reshape(n, group), rstd.reshape(n, group)


@aten("group_norm.default")
def _group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return N.group_norm(x, num_groups, weight, bias, eps)


def _batch_stats(x):
    axes = (0,) + tuple(range(2, x.ndim))
    xf = x.cast(_cdt(x))
    mu = xf.mean(axes, keepdim=True)
    d = xf - mu
    var = (d * d).mean(axes, keepdim=True)
    return mu.reshape(-1), (var + 0).reshape(-1), axes


@aten("_native_batch_norm_legit_functional.default")
def _bn_functional(x, weight, bias, running_mean, running_var, training, momentum, eps):
    if not training:
        y = N.batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
        return y, Unsupported("save_mean of batch norm in eval mode"), Unsupported("save_invstd"), \
            running_mean, running_var
    y, new_mean, new_var = N.batch_norm(x, running_mean, running_var, weight, bias, True, momentum, eps,
                                        return_stats=True)
    mu, var, _ = _batch_stats(x)
    return y, mu, (var + eps).rsqrt(), new_mean, new_var


@aten("_native_batch_norm_legit_no_training.default")
def _bn_no_training(x, weight, bias, running_mean, running_var, momentum, eps):
    y = N.batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
    return y, Unsupported("the mean output of batch norm in eval mode"), Unsupported("the invstd output")


@aten("_native_batch_norm_legit.no_stats")
def _bn_no_stats(x, weight, bias, training, momentum, eps):
    y = N.batch_norm(x, None, None, weight, bias, True, momentum, eps)
    mu, var, _ = _batch_stats(x)
    return y, mu, (var + eps).rsqrt()


@aten("_native_batch_norm_legit.default")
def _bn_legit(x, weight, bias, running_mean, running_var, training, momentum, eps):
    if training:
        raise UnsupportedOpError("_native_batch_norm_legit in training mode updates the running statistics "
                                 "in place (export the model with torch.export so the update is functional)")
    return _bn_no_training(x, weight, bias, running_mean, running_var, momentum, eps)


# ------------------------------------------------------------------------------------------------
# attention

@aten("scaled_dot_product_attention.default")
def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False):
    if dropout_p:
        raise UnsupportedOpError(f"scaled_dot_product_attention with dropout_p={dropout_p}: Ember cannot "
                                 "reproduce PyTorch's random numbers (use dropout_p=0 or eval mode)")
    if attn_mask is not None and is_causal:
        raise UnsupportedOpError("scaled_dot_product_attention with both attn_mask and is_causal")
    return A.scaled_dot_product_attention(q, k, v, attn_mask, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


def _check_dropout(p, train):
    if train and p > 0:
        raise UnsupportedOpError(f"dropout with p={p} in training mode: Ember cannot reproduce PyTorch's "
                                 "random numbers (call .eval() or use p=0)")


@aten("dropout.default", "feature_dropout.default", "alpha_dropout.default", "feature_alpha_dropout.default")
def _dropout(x, p, train):
    _check_dropout(p, train)
    return x


@aten("native_dropout.default")
def _native_dropout(x, p, train):
    _check_dropout(p, train)
    return x, Unsupported("the mask output of native_dropout")


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
    from ..tensor import broadcast_shapes
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


# ------------------------------------------------------------------------------------------------
# losses (reduction: 0 none, 1 mean, 2 sum, as ATen's enum)

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


@aten("mse_loss.default")
def _mse(x, y, reduction=1):
    return LS.mse_loss(x, y, _REDUCTION[reduction])


@aten("l1_loss.default")
def _l1(x, y, reduction=1):
    return LS.l1_loss(x, y, _REDUCTION[reduction])


@aten("smooth_l1_loss.default")
def _smooth_l1(x, y, reduction=1, beta=1.0):
    if beta == 0:
        return LS.l1_loss(x, y, _REDUCTION[reduction])
    return LS.smooth_l1_loss(x, y, _REDUCTION[reduction], beta)


@aten("huber_loss.default")
def _huber(x, y, reduction=1, delta=1.0):
    return LS.huber_loss(x, y, _REDUCTION[reduction], delta)


@aten("binary_cross_entropy.default")
def _bce(x, y, weight=None, reduction=1):
    if weight is None:
        return LS.binary_cross_entropy(x, y, _REDUCTION[reduction])
    return LS._reduce(LS.binary_cross_entropy(x, y, "none") * weight, _REDUCTION[reduction])


@aten("binary_cross_entropy_with_logits.default")
def _bce_logits(x, y, weight=None, pos_weight=None, reduction=1):
    x = _float(x)
    if pos_weight is None:
        loss = LS.binary_cross_entropy_with_logits(x, y, "none")
    else:  # (1 - y) * x + (1 + (pw - 1) * y) * softplus(-x), softplus written stably
        lw = (pos_weight - 1) * y + 1
        sp = (-x).relu() + (1.0 + (-x.abs()).exp()).log()
        loss = (1 - y) * x + lw * sp
    if weight is not None:
        loss = loss * weight
    return LS._reduce(loss, _REDUCTION[reduction])


def _nll(logp, target, weight, reduction, ignore_index):
    cls_axis = 1 if logp.ndim > 1 else 0
    c = logp.shape[cls_axis]
    t = I._int_index(target)
    valid = t != ignore_index
    safe = where(valid, t, 0)
    oh = I.one_hot(safe, c, logp.dtype)
    if cls_axis == 1 and logp.ndim > 2:
        oh = oh.movedim(-1, 1)
    picked = -(logp * oh).sum(cls_axis)
    w = valid.cast(logp.dtype)
    if weight is not None:
        w = w * I.index_select(weight, 0, safe.reshape(-1)).reshape(safe.node.shape)
    loss = picked * w
    if reduction == 0:
        return loss, Unsupported("total_weight of nll_loss with reduction='none'")
    total = w.sum()
    if reduction == 2:
        return loss.sum(), total
    return loss.sum() / total, total


@aten("nll_loss_forward.default", "nll_loss2d_forward.default")
def _nll_loss_forward(logp, target, weight, reduction, ignore_index):
    return _nll(logp, target, weight, reduction, ignore_index)


@aten("nll_loss.default", "nll_loss_nd.default", "nll_loss2d.default")
def _nll_loss(logp, target, weight=None, reduction=1, ignore_index=-100):
    return _nll(logp, target, weight, reduction, ignore_index)[0]


# ------------------------------------------------------------------------------------------------
# refused ops: kept whole by the decomposition step so the error names them and says why

_RANDOM_WHY = ("random number generation: Ember cannot reproduce PyTorch's random numbers "
           "(pass random tensors in as inputs instead)")
REFUSED: dict[str, str] = {k: _RANDOM_WHY for k in (
    "rand.default", "randn.default", "rand_like.default", "randn_like.default", "bernoulli.p", "bernoulli.default",
    "randint.low", "randint.default", "randperm.default", "normal.Tensor_float", "normal.float_Tensor",
    "normal.Tensor_Tensor", "uniform.default", "exponential.default", "multinomial.default")}
REFUSED.update({k: "its output shape depends on the data (Ember's shapes are static)" for k in (
    "nonzero.default", "masked_select.default", "unique.default", "_unique2.default", "unique_dim.default",
    "unique_consecutive.default")})


# ------------------------------------------------------------------------------------------------
# fused RNN cells (what torch.export leaves of nn.GRUCell / nn.LSTMCell on CUDA)

def _gate_sum(g, bias):
    return g if bias is None else g + bias


@aten("_thnn_fused_lstm_cell.default")
def _fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    gates = _gate_sum(input_gates, input_bias) + _gate_sum(hidden_gates, hidden_bias)
    h = gates.shape[1] // 4
    i, f, g, o = gates.split([h, h, h, h], 1)
    cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
    hy = o.sigmoid() * cy.tanh()
    return hy, cy, Unsupported("the fused LSTM cell's workspace (saved for backward only)")


@aten("_thnn_fused_gru_cell.default")
def _fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    ig, hg = _gate_sum(input_gates, input_bias), _gate_sum(hidden_gates, hidden_bias)
    h = ig.shape[1] // 3
    ir_, iz, in_ = ig.split([h, h, h], 1)
    hr, hz, hn = hg.split([h, h, h], 1)
    r, z = (ir_ + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return (1.0 - z) * n + z * hx, Unsupported("the fused GRU cell's workspace (saved for backward only)")
