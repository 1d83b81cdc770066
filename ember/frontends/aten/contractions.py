"""ATen contractions and sliding windows: matmul family, linear, einsum; convolution and pooling."""
from __future__ import annotations

import numpy as np

from ... import graph as g
from ...ops import conv as C
from ...ops import linalg as L
from ...tensor import Tensor, _float
from .registry import CONVERTERS, Unsupported, UnsupportedOpError, aten

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
