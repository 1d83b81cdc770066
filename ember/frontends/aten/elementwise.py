"""ATen elementwise ops: identities and copies, arithmetic, activations, comparisons and logic."""
from __future__ import annotations

import math

from ...tensor import Tensor, _divide_rounded, _float, _operands, where
from ...tensor import pow as em_pow
from .registry import _RANDOM_WHY, CONVERTERS, Unsupported, UnsupportedOpError, _dtype, _t, aten

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
