"""Reductions and what is built on them: sum/max primitives; min, mean, var, std, prod, argmax,
argmin, logsumexp, softmax, log_softmax, cumsum, all/any."""
from __future__ import annotations

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..tensor import _HALF, ShapeError, Tensor, _float, iota, opmath, tensor_method, where

__all__ = ["sum", "max", "min", "mean", "var", "std", "prod", "argmax", "argmin", "logsumexp", "softmax",
           "log_softmax", "cumsum", "cumprod", "amax", "amin", "all", "any"]

_builtin_sum, _builtin_max, _builtin_min, _builtin_all, _builtin_any = sum, max, min, all, any


def _axes(x: Tensor, axis, dim=None) -> tuple:
    if dim is not None:
        if axis is not None:
            raise TypeError("give either axis or dim, not both")
        axis = dim
    if axis is None:
        return tuple(range(x.ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        if not -x.ndim <= a < _builtin_max(x.ndim, 1):
            raise IndexError(f"reduction axis {a} out of range for a tensor of rank {x.ndim}")
        out.append(a % x.ndim if x.ndim else 0)
    return tuple(sorted(set(out)))


def _finish(x: Tensor, r: Tensor, axes: tuple, keepdim: bool) -> Tensor:
    if keepdim or not axes:
        return r
    return r.reshape([s for i, s in enumerate(r.node.shape) if i not in axes])


def _count(x: Tensor, axes: tuple):
    """Number of elements reduced, as a Python int or (symbolic) a 0-d float tensor."""
    n = sm.prod(x.node.shape[a] for a in axes)
    return n.value if n.is_const else Tensor(g.iota_node((), n, dt.int32)).cast(dt.float32)


def _reduce(op: str, x: Tensor, axes: tuple, keepdim: bool) -> Tensor:
    if x.ndim == 0:
        return x
    return _finish(x, Tensor(g.reduce_node(op, x.node, axes)), axes, keepdim)


def contract(prod: Tensor, axes, kind: str) -> Tensor:
    """prod (a broadcast product) summed over axes: a contraction of `kind` ("matmul" or "conv"),
    whose products may use TF32 operands where the user allowed it (ember/precision.py)."""
    from ..precision import tf32_allowed
    axes = _axes(prod, axes)
    if prod.ndim == 0 or not axes:
        return prod
    return _finish(prod, Tensor(g.reduce_node(g.SUM, prod.node, axes, tf32=tf32_allowed(kind))), axes, False)


@tensor_method
def sum(x: Tensor, axis=None, keepdim: bool = False, *, dim=None, dtype=None) -> Tensor:
    if dtype is not None:
        x = x.cast(dtype)
    elif x.dtype.is_bool:
        x = x.cast(dt.int32)
    return _reduce(g.SUM, x, _axes(x, axis, dim), keepdim)


def _check_nonempty(what: str, x: Tensor, axes: tuple) -> None:
    """max / min / argmax / argmin have no identity to return over nothing: refuse an axis of size 0
    (known when the graph is built), as torch does."""
    for a in axes:
        n = x.node.shape[a]
        if n.is_const and n.value == 0:
            raise ShapeError(f"{what}(): expected reduction dim {a} to have non-zero size "
                             f"(input shape {tuple(x.shape)})")


@tensor_method
def max(x: Tensor, axis=None, keepdim: bool = False, *, dim=None, _what: str = "max") -> Tensor:
    """Maximum over axes (values only; use argmax for positions). NaN propagates (the MAX
    primitive's semantics, as np.max and torch.amax)."""
    axes = _axes(x, axis, dim)
    _check_nonempty(_what, x, axes)
    return _reduce(g.MAX, x, axes, keepdim)


amax = tensor_method(max, name="amax")  # x.amax(...), as torch


@tensor_method
def min(x: Tensor, axis=None, keepdim: bool = False, *, dim=None) -> Tensor:
    if x.dtype.is_bool:
        return ~max(~x, axis, keepdim, dim=dim, _what="min")
    return -max(-x, axis, keepdim, dim=dim, _what="min")


amin = tensor_method(min, name="amin")


@tensor_method
def mean(x: Tensor, axis=None, keepdim: bool = False, *, dim=None) -> Tensor:
    if not x.dtype.is_float:
        raise TypeError(f"mean needs a floating-point tensor, got {x.dtype.name} (cast first)")
    axes = _axes(x, axis, dim)
    n = _count(x, axes)
    s = sum(x, axes, keepdim)
    if isinstance(n, int):
        return s * (1.0 / n) if n else s / 0.0  # the mean of nothing is 0/0 = NaN, as in torch
    return s / n


@tensor_method
@opmath
def var(x: Tensor, axis=None, unbiased=None, keepdim: bool = False, *, dim=None, correction=None) -> Tensor:
    """Variance over axes. The positional order is torch's (dim, unbiased, keepdim): x.var(1, False)
    is the biased variance, as in torch, never keepdim=False."""
    if unbiased is not None and correction is not None:
        raise TypeError("var: give either unbiased or correction, not both")
    correction = (1 if unbiased else 0) if unbiased is not None else (1 if correction is None else correction)
    x = _float(x)
    axes = _axes(x, axis, dim)
    mu = mean(x, axes, keepdim=True)
    d = x - mu
    n = _count(x, axes)
    ss = sum(d * d, axes, keepdim)
    if isinstance(n, int):
        return ss * (1.0 / _builtin_max(n - correction, 0)) if n - correction > 0 else ss / 0.0
    return ss / (n - correction)


@tensor_method
@opmath
def std(x: Tensor, axis=None, unbiased=None, keepdim: bool = False, *, dim=None, correction=None) -> Tensor:
    return var(x, axis, unbiased, keepdim, dim=dim, correction=correction).sqrt()


def _tree_prod(x: Tensor, a: int) -> Tensor:
    """Product along the static axis a as a balanced tree of elementwise multiplies (log2(n) levels
    of half-slices, an odd length padded with a 1): exact for integers (wrapping as C does), and
    IEEE for zeros, infinities and NaN (0 * inf is NaN, as in torch)."""
    from .movement import _slice_axis, pad_axes
    n = x.node.shape[a].value
    if n == 0:  # the empty product is 1
        shape = [sm.ONE if d == a else s for d, s in enumerate(x.node.shape)]
        return Tensor(g.const_node(1, x.dtype)).broadcast_to(shape)
    while n > 1:
        if n % 2:
            per = [(0, 0)] * x.ndim
            per[a] = (0, 1)
            x = pad_axes(x, per, 1)
            n += 1
        h = n // 2
        x = _slice_axis(x, a, 0, h, 1) * _slice_axis(x, a, h, n, 1)
        n = h
    return x


@tensor_method
@opmath
def prod(x: Tensor, axis=None, keepdim: bool = False, *, dim=None) -> Tensor:
    """Product over axes: a multiply tree over static axes; over symbolic ones,
    sign * 2^(sum log2|x|) (exact for zeros and signs, approximate for large integers)."""
    if x.dtype.is_bool:
        return all(x, axis, keepdim, dim=dim)
    axes = _axes(x, axis, dim)
    if x.ndim == 0 or not axes:
        return x
    if _builtin_all(x.node.shape[a].is_const for a in axes):
        r = x
        for a in axes:
            r = _tree_prod(r, a)
        return _finish(x, r, axes, keepdim)
    xf = _float(x)
    mag = sum(xf.abs().log2(), axes, keepdim).exp2()
    negs = sum((xf < 0).cast(dt.int32), axes, keepdim)
    zeros = any(xf == 0, axes, keepdim, dim=None)
    r = where(zeros, 0.0, where(negs.fmod(2) == 1, -mag, mag))
    return r if x.dtype.is_float else r.round().cast(x.dtype)


@tensor_method
def all(x: Tensor, axis=None, keepdim: bool = False, *, dim=None) -> Tensor:
    b = x if x.dtype.is_bool else x != 0
    return ~any(~b, axis, keepdim, dim=dim)


@tensor_method
def any(x: Tensor, axis=None, keepdim: bool = False, *, dim=None) -> Tensor:
    b = x if x.dtype.is_bool else x != 0
    axes = _axes(b, axis, dim)
    return _reduce(g.MAX, b.cast(dt.int32), axes, keepdim) > 0 if b.ndim else b


def _arg_extreme(x: Tensor, axis, keepdim: bool, largest: bool) -> Tensor:
    if axis is None:
        x, axis = x.reshape(-1), 0
    a = _axes(x, axis)[0]
    _check_nonempty("argmax" if largest else "argmin", x, (a,))
    m = max(x, a, keepdim=True) if largest else min(x, a, keepdim=True)
    hit = x == m
    if x.dtype.is_float:
        hit = hit | (x.isnan() & m.isnan())
    n = x.node.shape[a]
    idx = iota(x.node.shape, a)
    big = n.value if n.is_const else Tensor(g.iota_node((), n, dt.int32))
    first = min(where(hit, idx, big), a, keepdim=True)  # first occurrence, like torch
    return first if keepdim else first.reshape([s for i, s in enumerate(first.node.shape) if i != a])


@tensor_method
def argmax(x: Tensor, axis=None, keepdim: bool = False, *, dim=None) -> Tensor:
    return _arg_extreme(x, dim if dim is not None else axis, keepdim, True)


@tensor_method
def argmin(x: Tensor, axis=None, keepdim: bool = False, *, dim=None) -> Tensor:
    return _arg_extreme(x, dim if dim is not None else axis, keepdim, False)


@tensor_method
@opmath
def logsumexp(x: Tensor, axis=None, keepdim: bool = False, *, dim=None) -> Tensor:
    x = _float(x)
    axes = _axes(x, axis, dim)
    m = _reduce(g.MAX, x, axes, True)
    m = where(m.isinf(), 0.0, m)  # all -inf (or +inf) rows: avoid inf - inf
    s = sum((x - m).exp(), axes, True)
    return _finish(x, s.log() + m, axes, keepdim)


@tensor_method
def softmax(x: Tensor, axis: int = -1, *, dim=None, dtype=None) -> Tensor:
    x = _float(x) if dtype is None else x.cast(dtype)
    a = _axes(x, dim if dim is not None else axis)
    out = x.dtype
    x = x.cast(dt.float32) if out in _HALF else x  # float32 inside, one rounding at the end (as torch)
    e = (x - _reduce(g.MAX, x, a, True)).exp()
    return (e / sum(e, a, keepdim=True)).cast(out)


@tensor_method
def log_softmax(x: Tensor, axis: int = -1, *, dim=None, dtype=None) -> Tensor:
    x = _float(x) if dtype is None else x.cast(dtype)
    a = _axes(x, dim if dim is not None else axis)
    out = x.dtype
    x = x.cast(dt.float32) if out in _HALF else x
    return (x - logsumexp(x, a, keepdim=True)).cast(out)


CUMSUM_BLOCK = 32  # scan block length: each output reads at most this many inputs per level


@tensor_method
def cumsum(x: Tensor, axis: int = 0, *, dim=None, dtype=None) -> Tensor:
    """Inclusive prefix sum, as a blocked scan of masked contractions (see _scan_last)."""
    if dtype is not None:
        x = x.cast(dtype)
    elif x.dtype.is_bool:
        x = x.cast(dt.int32)
    a = _axes(x, dim if dim is not None else axis)[0]
    if x.dtype in _HALF:  # summed in float32 and rounded once, as torch's kernels do: the block totals
        # and their scan would otherwise be stored (rounded) in the half type, one rounding more a level
        return _scan_last(x.cast(dt.float32).movedim(a, -1)).movedim(-1, a).cast(x.dtype)
    return _scan_last(x.movedim(a, -1)).movedim(-1, a)


@tensor_method
def cumprod(x: Tensor, axis: int = 0, *, dim=None, dtype=None) -> Tensor:
    """Inclusive prefix product, from two prefix sums (the graph has no product reduction): the
    magnitude 2^cumsum(log2|x|) — a zero's -inf makes every later magnitude 0, an infinity after it
    NaN, as the products do — and the sign from the parity of the negatives seen. Float only (an
    integer product is exact in torch, not through logarithms). Its error against float64
    (tests/test_scan.py): as float32's own sequential product relative to the largest output; per
    element up to ~n * eps * |log2 x| relative over a prefix of n terms (the sequential product's is
    ~n * eps)."""
    if dtype is not None:
        x = x.cast(dtype)
    if not x.dtype.is_float:
        raise TypeError(f"cumprod of {x.dtype}: only floating-point inputs are supported (an integer product "
                        f"through logarithms would not be exact)")
    a = _axes(x, dim if dim is not None else axis)[0]
    out = x.dtype
    xf = x.cast(dt.float32) if out in _HALF else x
    mag = xf.abs().log2().cumsum(a).exp2()
    negative = (xf < 0).cast(dt.int32).cumsum(a) % 2 == 1
    return where(negative, -mag, mag).cast(out)


def _masked_scan_last(xm: Tensor) -> Tensor:
    """out[i] = sum_j x[j] * (j <= i) over the last axis: n*n work, for short axes."""
    n = xm.node.shape[-1]
    sq = list(xm.node.shape) + [n]
    xj = xm.unsqueeze(-2).broadcast_to(sq)  # position (..., i, j) holds x[..., j]
    mask = iota(sq, -1) <= iota(sq, -2)
    return sum(where(mask, xj, 0), -1)


def _scan_last(xm: Tensor) -> Tensor:
    """Inclusive prefix sum over the last axis. An axis longer than CUMSUM_BLOCK is cut into blocks
    (zero-padded to a whole number of them): a masked scan inside each block, the block totals
    scanned recursively (exclusive: the running total before the block, the inclusive scan shifted
    one block), then added. Work per
    element is about CUMSUM_BLOCK per level instead of n, and the summation order is a tree, which
    is no less accurate than torch's."""
    n = xm.node.shape[-1]
    if not n.is_const or n.value <= CUMSUM_BLOCK:
        return _masked_scan_last(xm)
    b = CUMSUM_BLOCK
    m = -(-n.value // b)
    lead = list(xm.node.shape[:-1])
    if m * b != n.value:
        from .movement import pad_axes
        xm = pad_axes(xm, [(0, 0)] * len(lead) + [(0, m * b - n.value)])
    blocks = xm.reshape(lead + [m, b])
    # the block totals summed from the input, not read off the local scan's last column: then the
    # local scan's one reader is the add below, and the two fuse into one kernel that reads the
    # input and writes the output once (a renderer that knows the masked sum is a scan runs it as
    # one, codegen/cuda_scan.py)
    totals = sum(blocks, -1)
    # the exclusive scan of the block totals: the inclusive one shifted by a block (a view), not the
    # inclusive one minus the totals — an infinite total made that NaN for the block's own positions
    from .movement import pad_axes
    before = pad_axes(_scan_last(totals)[..., :m - 1], [(0, 0)] * len(lead) + [(1, 0)])
    out = (_masked_scan_last(blocks) + before.unsqueeze(-1)).reshape(lead + [m * b])
    return out[..., :n.value] if m * b != n.value else out
