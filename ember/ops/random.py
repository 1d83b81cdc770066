"""Random numbers inside the graph, from the counter-based PHILOX primitive (ember/primitives/random.py).

Element i of ``rand(shape, seed, offset)`` is ``philox(seed, offset + i)`` (i the row-major flat
index): a pure function of (seed, offset, shape), identical on the reference, the CPU and the GPU, in
any schedule. The seed may be a Python int or a 0-d int64 tensor (a graph input, to draw a new stream
each call without recompiling); so may the offset.
"""
from __future__ import annotations

from collections.abc import Sequence

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..symbolic import sym
from ..tensor import Tensor, full, opmath, tensor_method, where
from ..view import index_name, row_major_strides

__all__ = ["dropout", "rand"]


def _int64_scalar(v, what: str) -> Tensor:
    if isinstance(v, Tensor):
        if v.ndim != 0 or not v.dtype.is_int:
            raise TypeError(f"{what} must be an int or a 0-d integer tensor, got {v.dtype.name}{list(v.shape)}")
        return v.cast(dt.int64)
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{what} must be an int or a 0-d integer tensor, got {type(v).__name__}")
    if not -2**63 <= v < 2**63:
        raise ValueError(f"{what} {v} does not fit in 64 bits")
    return Tensor(g.const_node(v, dt.int64))


def rand(shape: Sequence, seed=0, offset=0, dtype=dt.float32) -> Tensor:
    """Uniform samples in [0, 1) of `shape` (float32; other float dtypes are cast from it),
    reproducible from (seed, offset): Philox4x32-10 of the counter offset + flat index."""
    shape = tuple(sym(s) for s in shape)
    d = dt.as_dtype(dtype)
    if not d.is_float:
        raise TypeError(f"rand gives floating-point samples, not {d.name}")
    flat = sm.ZERO
    for axis, (n, stride) in enumerate(zip(shape, row_major_strides(shape))):
        flat = flat + sm.index_var(index_name(axis), n) * stride
    counter = Tensor(g.iota_node(shape, flat, dt.int64))
    off = _int64_scalar(offset, "rand offset")
    if not (off.node.op == g.CONST and off.node.arg == 0):
        counter = counter + off.broadcast_to(shape)
    key = _int64_scalar(seed, "rand seed").broadcast_to(shape)
    u = Tensor(g.binary(g.PHILOX, key.node, counter.node))
    return u if d == dt.float32 else u.cast(d)


@tensor_method
@opmath
def dropout(x: Tensor, p: float = 0.5, seed=0, training: bool = True, offset=0) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (torch's dropout), the
    mask drawn by `rand(x.shape, seed, offset)`: element i is dropped when its sample is < p. The
    gradient passes through the same mask (it is the WHERE's). Identity when not training or p == 0."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return where(full(x.node.shape, True, dt.bool_), 0.0, x)  # all dropped; keeps x's shape and dtype
    u = rand(x.node.shape, seed, offset)
    return where(u < p, 0.0, x * (1.0 / (1.0 - p)))
