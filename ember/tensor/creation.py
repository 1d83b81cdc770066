"""The graph's leaves and constants as Tensors: named inputs, filled and like-shaped constants,
ranges and index tensors. (`tensor` and `full` themselves are in core.py: the operators build their
constants with them.)
"""
from __future__ import annotations

import math
from typing import Sequence

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..symbolic import sym
from .core import Tensor, full, full_like


def input(name: str, shape: Sequence, dtype=dt.float32) -> Tensor:
    """A named graph input; dimensions may be ints or names (bound when the graph runs)."""
    return Tensor(g.input_node(name, tuple(shape), dt.as_dtype(dtype)))


def zeros(shape: Sequence, dtype=dt.float32) -> Tensor:
    return full(shape, 0, dtype)


def ones(shape: Sequence, dtype=dt.float32) -> Tensor:
    return full(shape, 1, dtype)


def zeros_like(x: Tensor, dtype=None) -> Tensor:
    return full_like(x, 0, dtype)


def ones_like(x: Tensor, dtype=None) -> Tensor:
    return full_like(x, 1, dtype)


def arange(start, stop=None, step=1, dtype=None) -> Tensor:
    """Like torch.arange. Integer arguments give int32, floats give float32."""
    if stop is None:
        start, stop = 0, start
    floats = any(isinstance(v, float) for v in (start, stop, step))
    if dtype is not None and dt.as_dtype(dtype).is_float:
        floats = True
    if not floats:
        n = sm.maximum((sym(stop) - start + (step - 1)) // step if step > 0 else (sym(start) - stop + (-step - 1)) // (-step), 0)
        idx = sm.index_var("_i0", n)
        t = Tensor(g.iota_node((n,), idx * step + start, dt.int32))
        return t if dtype is None else t.cast(dtype)
    n = max(int(math.ceil((stop - start) / step)), 0)
    i = Tensor(g.iota_node((n,), sm.index_var("_i0", n), dt.int32)).cast(dtype or dt.float32)
    return i * step + start


def iota(shape: Sequence, axis: int, dtype=dt.int32) -> Tensor:
    """Integer tensor whose value is its own index along `axis`."""
    shape = tuple(sym(s) for s in shape)
    return Tensor(g.iota_node(shape, sm.index_var(f"_i{axis % len(shape)}", shape[axis % len(shape)]), dt.int32)).cast(dtype)
