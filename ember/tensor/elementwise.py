"""Elementwise math on Tensors (exp, log, trig, abs, sign, min/max, rounding, NaN/inf tests),
each a composition of the primitives, attached as Tensor methods; and `opmath`, which evaluates a
float16/bfloat16 composition in float32 as PyTorch's kernels do.
"""
from __future__ import annotations

import functools
import math

from .. import dtypes as dt
from .core import Tensor, _float, _operands, full_like, isnan, tensor_method, where
from .creation import zeros_like

LN2 = math.log(2.0)
LOG2E = 1.0 / LN2

_HALF = (dt.float16, dt.bfloat16)


def opmath(fn):
    """Evaluate a float composition in float32 when its (first) tensor argument is float16/bfloat16,
    rounding once at the end, as PyTorch's kernels do. Without it the constants inside a composition
    (log2(e) in exp, the polynomial of erf, ...) would be rounded to the half type: bfloat16's
    log2(e) alone is 0.2% off, which exp(x) multiplies by |x|."""
    @functools.wraps(fn)
    def wrapper(x, *args, **kw):
        if isinstance(x, Tensor) and x.dtype in _HALF:
            out = fn(x.cast(dt.float32), *args, **kw)
            return out.cast(x.dtype) if isinstance(out, Tensor) and out.dtype == dt.float32 else out
        return fn(x, *args, **kw)
    return wrapper


@tensor_method
@opmath
def exp(self) -> "Tensor":
    return (_float(self) * LOG2E).exp2()


@tensor_method
@opmath
def log(self) -> "Tensor":
    return _float(self).log2() * LN2


@tensor_method
@opmath
def log10(self) -> "Tensor":
    return _float(self).log2() * (LN2 / math.log(10.0))


@tensor_method
@opmath
def log1p(self) -> "Tensor":
    """log(1 + x), accurate for tiny x in any precision (Goldberg's correction: log(u) * x / (u - 1)
    with u = 1 + x rounded, which cancels u's rounding error). Keep u - 1 as written: rewriting it
    to x is exact algebra but undoes the correction."""
    x = _float(self)
    u = x + 1
    d = u - 1
    return where(d == 0, x, where(u < math.inf, u.log() * (x / d), u))


@tensor_method
@opmath
def expm1(self) -> "Tensor":
    """exp(x) - 1, accurate for tiny x.

    float64: Kahan's (u - 1) * x / log(u) with u = exp(x) rounded. Narrower floats: the Taylor
    polynomial through x^8/8! where |x| < 1/2 (truncation below 1.1e-8 relative, under float32's
    half ulp), exp(x) - 1 elsewhere (~2 ulp lost to the subtraction there, on top of exp's own
    error: 9 ulp at most over 1e5 float32 samples on the CPU). The polynomial is eight
    multiply-adds where Kahan's form needs a logarithm and a division."""
    x = _float(self)
    u = x.exp()
    if x.dtype == dt.float64:
        um1 = u - 1
        return where(um1 == 0, x, where(um1 == -1, -1.0, where(u < math.inf, um1 * (x / u.log()), u)))
    p = x * (1.0 / math.factorial(8))
    for n in range(7, 0, -1):
        p = x * (p + 1.0 / math.factorial(n))
    return where(x.abs() < 0.5, p, u - 1)


@tensor_method
@opmath
def cos(self) -> "Tensor":
    return (_float(self) + math.pi / 2).sin()


@tensor_method
@opmath
def tan(self) -> "Tensor":
    return self.sin() / self.cos()


@tensor_method
@opmath
def rsqrt(self) -> "Tensor":
    return _float(self).sqrt().reciprocal()


@tensor_method
def square(self) -> "Tensor":
    return self * self


@tensor_method
def abs(self) -> "Tensor":
    if self.dtype.is_bool:
        return self
    return where(self < 0, -self, self)


@tensor_method
def sign(self) -> "Tensor":
    if self.dtype.is_bool:
        return self
    z = zeros_like(self)
    return where(self < 0, z - 1, where(self > 0, z + 1, z))  # sign(NaN) is 0, as in torch


@tensor_method
def neg(self) -> "Tensor":
    return -self


@tensor_method
def maximum(self, o) -> "Tensor":
    """Elementwise max; NaN propagates (as in torch.maximum)."""
    a, b = _operands(self, o)
    r = where(a < b, b, a)
    if a.dtype.is_float:
        r = where(isnan(b), b, r)
    return r


@tensor_method
def minimum(self, o) -> "Tensor":
    a, b = _operands(self, o)
    r = where(b < a, b, a)
    if a.dtype.is_float:
        r = where(isnan(b), b, r)
    return r


@tensor_method
def clamp(self, min=None, max=None) -> "Tensor":
    x = self
    if min is not None:
        x = x.maximum(min)
    if max is not None:
        x = x.minimum(max)
    return x


clip = tensor_method(clamp, name="clip")


@tensor_method
def floor(self) -> "Tensor":
    if not self.dtype.is_float:
        return self
    t = self.trunc()
    return where(self < t, t - 1, t)


@tensor_method
def ceil(self) -> "Tensor":
    if not self.dtype.is_float:
        return self
    return -((-self).floor())


@tensor_method
def trunc(self) -> "Tensor":
    if not self.dtype.is_float:
        return self
    # x - fmod(x, 1) is NaN for +-inf (fmod(inf, 1) is NaN); infinities (and NaN) are their own trunc
    return where(self.abs() < math.inf, self - self.fmod(1.0), self)


@tensor_method
def round(self) -> "Tensor":
    """Round half to even (as torch.round)."""
    if not self.dtype.is_float:
        return self
    f = self.floor()
    d = self - f
    even = (f.fmod(2.0) == 0)
    up = (d > 0.5) | ((d == 0.5) & ~even)
    return where(up, f + 1, f)


@tensor_method
def isinf(self) -> "Tensor":
    if not self.dtype.is_float:
        return full_like(self, False, dt.bool_)
    return self.abs() == math.inf


@tensor_method
def isfinite(self) -> "Tensor":
    return ~(self.isnan() | self.isinf())


@tensor_method
def lerp(self, end, weight) -> "Tensor":
    return self + (end - self) * weight
