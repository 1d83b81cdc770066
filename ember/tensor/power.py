"""`pow` and the `**` operators: exact products and square roots for small integer and half-integer
exponents, square-and-multiply for integer tensors, exp2(e * log2|b|) with torch's special cases
otherwise.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .core import Tensor, _float, _is_scalar, _operands, tensor_method, where
from .creation import ones_like
from .elementwise import _HALF


def _is_integral(v) -> bool:
    if isinstance(v, Tensor):
        return not v.dtype.is_float
    return isinstance(v, (int, np.integer))  # bool is an int here too, as in torch


def _int_pow(b: Tensor, e: Tensor) -> Tensor:
    """Integer tensor ** integer tensor, exact (wrapping like C, as torch's int pow): square-and-
    multiply over the exponent's bits. Negative exponents give 1 // b**|e| truncated (0 unless
    |b| == 1), as torch."""
    if b.dtype.is_bool:
        b, e = b.cast(dt.int32), e.cast(dt.int32)
    bits = 8 * b.dtype.itemsize - 1
    result, sq = ones_like(b), b
    for k in range(bits):
        bit = (e >= (1 << k)) if k == bits - 1 else (e.fmod(1 << (k + 1)) >= (1 << k))
        result = where(bit, result * sq, result)
        if k < bits - 1:
            sq = sq * sq
    odd = e.fmod(2) != 0
    neg_exp = where(b == 1, 1, where(b == -1, where(odd, -1, 1), 0))
    return where(e < 0, neg_exp.cast(b.dtype), result)


def pow(base, exponent) -> Tensor:
    """base ** exponent. Small integer and half-integer scalar exponents are exact products/sqrts;
    the general case is exp2(e * log2|b|) with the sign and zero cases fixed up like torch.pow."""
    if isinstance(base, Tensor) and _is_scalar(exponent):
        e = float(exponent)
        if not base.dtype.is_float and isinstance(exponent, (float, np.floating)):
            base = _float(base)
        if e == 0:
            return ones_like(base)
        if e.is_integer() and abs(e) <= 64:
            n = int(abs(e))
            result, sq = None, base
            while n:
                if n & 1:
                    result = sq if result is None else result * sq
                n >>= 1
                if n:
                    sq = sq * sq
            if e < 0:
                if not base.dtype.is_float:
                    raise ValueError("integers to negative integer powers are not allowed (as in torch)")
                result = result.reciprocal()
            return result
        if e == 0.5:
            return _float(base).sqrt()
        if e == -0.5:
            return _float(base).rsqrt()
    if _is_integral(base) and _is_integral(exponent):
        return _int_pow(*_operands(base, exponent))
    b, e = _operands(_float(base) if isinstance(base, Tensor) else base,
                     _float(exponent) if isinstance(exponent, Tensor) else float(exponent))
    b, e = _float(b), _float(e)
    if b.dtype in _HALF:  # compute in float32 and round once (see opmath)
        return pow(b.cast(dt.float32), e.cast(dt.float32)).cast(b.dtype)
    # The composition is arranged so that autograd of it gives torch's pow gradients:
    # d/db = e·b^(e-1), d/de = y·ln b (NaN at a negative base), both 0 where torch special-cases them.
    zero = b == 0
    e_zero = e == 0
    special = zero | (e_zero & ~b.isfinite())  # results fixed below; log2 of 1 there keeps NaN out of gradients
    mag = (e * where(special, 1.0, b).abs().log2()).exp2()
    e_int = e.floor() == e
    e_odd = e_int & (e.fmod(2.0).abs() == 1)
    neg = b < 0
    res = where(neg, where(e_int, where(e_odd, -mag, mag), math.nan), mag)
    # At a negative base the real power has no derivative in e (torch: y·log(b) = NaN), nor in b for a
    # non-integer e (torch: e·b^(e-1) = NaN). A term that is 0 but whose gradient is NaN there
    # (sqrt'(0)·0) reproduces both.
    h = where(neg & ~e_int & b.isfinite(), b * 0.0, 0.0)
    if isinstance(exponent, Tensor) and exponent.dtype.is_float:
        h = h + where(neg & e.isfinite(), e * 0.0, 0.0)
    res = res - (h * h).sqrt()
    # b == 0: 1 for e == 0, 0 for e > 0, inf for e < 0 (-inf for a negative odd e and b = -0.0, as torch).
    # The gradient there is torch's e·0^(e-1) w.r.t. b (1 at e == 1, +inf for 0 < e < 1, ±inf for e < 0)
    # and 0 w.r.t. e (torch: 0 for e >= 0; for e < 0 it gives y·log(0) = ±inf, which Ember does not).
    neg_zero = b.reciprocal() < 0
    y0 = where(e > 0, 0.0, where(e_zero, 1.0, where(e_odd & neg_zero, -math.inf, math.inf)))
    steep = where((e > 0) & (e < 1), 1.0, where(e < 0, where(neg_zero & e_int & ~e_odd, 1.0, -1.0), 0.0))
    root = where(steep == 0, 1.0, b.abs() + 0.0).sqrt()  # (+0.0 turns -0.0 into +0.0; 1 keeps 0·inf out)
    y0 = y0 + b * where(e == 1, 1.0, 0.0) + steep * root
    # e == 0 gives 1 for every base (inf and NaN included); finite non-zero bases get it from mag = 2^0, so
    # their gradient w.r.t. e (log b) flows
    res = where(e_zero & ~b.isfinite(), 1.0, res)
    return where(zero, y0, res)


@tensor_method
def __pow__(self, e) -> "Tensor":
    return pow(self, e)


@tensor_method
def __rpow__(self, b) -> "Tensor":
    return pow(b, self)
