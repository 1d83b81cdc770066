"""Views: a tensor seen through index arithmetic over a flat buffer, never a copy.

A `View` maps the coordinates ``(_i0, …, _i{n-1})`` of its ``shape`` to

* ``index``: the position in the underlying flat (row-major) buffer, and
* ``valid``: 0/1, whether that position exists at all (padding and dilation produce invalid
  positions, which read as zero).

Both are symbolic expressions of the per-dimension index variables. Each movement op below builds the
new view by substituting, for the old index variables, expressions of the new ones — so a chain of
movement ops composes into one pair of expressions. A reshape of a permuted (non-contiguous) view is
still a view: the old coordinates are recovered from the new ones with ``//`` and ``%``, which the
simplifier folds back to plain strides whenever the index math allows (Luminal 2.0's "strides as
expressions of the per-dimension index", generalised to expressions of all indices).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

from . import symbolic as sm
from .symbolic import Expr, sym


def index_name(d: int) -> str:
    return f"_i{d}"


def index_vars(shape: Sequence[Expr]) -> list[Expr]:
    return [sm.index_var(index_name(d), s) for d, s in enumerate(shape)]


def row_major_strides(shape: Sequence[Expr]) -> list[Expr]:
    strides, acc = [], sm.ONE
    for s in reversed(shape):
        strides.append(acc)
        acc = acc * s
    return strides[::-1]


@functools.lru_cache(maxsize=4096)
def _contiguous_index(shape: tuple) -> Expr:
    return sm.sum_of(v * s for v, s in zip(index_vars(shape), row_major_strides(shape)))


class ViewError(ValueError):
    pass


def _hashable(a):
    return tuple(_hashable(x) for x in a) if isinstance(a, (list, tuple)) else a


def _memo(method):
    """A movement op kept per (view, arguments): views and expressions are interned and the ops are
    pure, and an unrolled recurrence builds the same few views thousands of times (40_GRUHidden's
    import: 238k views, a third of its time substituting the same expressions)."""
    cached = functools.lru_cache(maxsize=1 << 16)(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kw):
        key = tuple(_hashable(a) for a in args)
        try:
            hash(key), hash(tuple(kw.values()))
        except TypeError:  # (an argument that is not a plain value: computed, not kept)
            return method(self, *args, **kw)
        return cached(self, *key, **{k: _hashable(v) for k, v in kw.items()})
    return wrapper


@dataclass(frozen=True)
class View:
    shape: tuple
    index: Expr
    valid: Expr

    # ---------------------------------------------------------------- construction
    @staticmethod
    def contiguous(shape: Sequence) -> "View":
        shape = tuple(sym(s) for s in shape)
        return View(shape, _contiguous_index(shape), sm.ONE)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Expr:
        return sm.prod(self.shape)

    def is_contiguous(self) -> bool:
        return self.valid is sm.ONE and self.index is _contiguous_index(self.shape)

    def _remap(self, new_shape: Sequence[Expr], old_coords: Sequence[Expr], extra_valid: Expr = sm.ONE) -> "View":
        m = {index_name(d): c for d, c in enumerate(old_coords)}
        idx = sm.substitute(self.index, m)
        valid = sm.logical_and(sm.substitute(self.valid, m), extra_valid)
        return View(tuple(new_shape), idx, valid)

    # ---------------------------------------------------------------- movement ops
    @_memo
    def reshape(self, new_shape: Sequence) -> "View":
        new_shape = tuple(sym(s) for s in new_shape)
        if sm.prod(new_shape) is not self.numel:
            raise ViewError(f"cannot reshape {sm.shape_str(self.shape)} ({self.numel} elements) "
                            f"to {sm.shape_str(new_shape)} ({sm.prod(new_shape)} elements)")
        if new_shape == self.shape:
            return self
        if self.numel is sm.ZERO:  # nothing to address (and a zero dim would make a zero stride)
            return View.contiguous(new_shape)
        if self.is_contiguous():  # row-major order is kept by any reshape (the common case, made cheap)
            return View.contiguous(new_shape)
        nv = index_vars(new_shape)
        old_dims = [d for d, s in enumerate(self.shape) if s is not sm.ONE]
        new_dims = [d for d, s in enumerate(new_shape) if s is not sm.ONE]
        if [self.shape[d] for d in old_dims] == [new_shape[d] for d in new_dims]:
            # only size-1 dims inserted or removed: rename the index variables of the others
            coords = [sm.ZERO] * self.ndim
            for o, n in zip(old_dims, new_dims):
                coords[o] = nv[n]
            return self._remap(new_shape, coords)
        flat = sm.sum_of(v * s for v, s in zip(nv, row_major_strides(new_shape)))
        coords = []
        for d, st in enumerate(row_major_strides(self.shape)):
            c = flat // st
            coords.append(c if d == 0 else c % self.shape[d])
        return self._remap(new_shape, coords)

    @_memo
    def permute(self, order: Sequence[int]) -> "View":
        order = tuple(order)
        if sorted(order) != list(range(self.ndim)):
            raise ViewError(f"permute order {order} is not a permutation of {self.ndim} axes")
        new_shape = tuple(self.shape[o] for o in order)
        nv = index_vars(new_shape)
        coords = [None] * self.ndim
        for k, o in enumerate(order):
            coords[o] = nv[k]
        return self._remap(new_shape, coords)

    @_memo
    def expand(self, new_shape: Sequence) -> "View":
        new_shape = tuple(sym(s) for s in new_shape)
        if len(new_shape) != self.ndim:
            raise ViewError(f"expand needs the same rank: {sm.shape_str(self.shape)} -> {sm.shape_str(new_shape)}")
        nv = index_vars(new_shape)
        coords = []
        for d, (old, new) in enumerate(zip(self.shape, new_shape)):
            if old is new:
                coords.append(nv[d])
            elif old is sm.ONE:
                coords.append(sm.ZERO)
            else:
                raise ViewError(f"cannot expand {sm.shape_str(self.shape)} to {sm.shape_str(new_shape)}: "
                                f"dimension {d} is {old}, not 1")
        return self._remap(new_shape, coords)

    @_memo
    def step(self, var: str) -> int | None:
        """How far the flat index moves when variable `var` moves by one (None where that depends on where)."""
        X = sm.var(var, 0, None)
        d = sm.substitute(self.index, {var: X + 1}) - sm.substitute(self.index, {var: X})
        return d.value if d.is_const else None

    @_memo
    def slice(self, axis: int, start, stop, step: int = 1) -> "View":
        """Elements start, start+step, … < stop along `axis` (step > 0; bounds already clipped)."""
        if step <= 0:
            raise ViewError(f"slice step must be positive, got {step} (use flip for reversal)")
        start, stop = sym(start), sym(stop)
        size = sm.maximum((stop - start + (step - 1)) // step, 0)
        n = self.shape[axis]
        if size.is_const and size.value > 0 and start.is_const and n.is_const:
            last = start.value + (size.value - 1) * step
            if start.value < 0 or last >= n.value:
                raise ViewError(f"slice [{start}:{stop}:{step}] reads index {start.value if start.value < 0 else last} "
                                f"of axis {axis} with length {n} (clip the bounds first)")
        elif sm.prove_lt(start, 0):
            raise ViewError(f"slice start {start} is negative on axis {axis} (clip the bounds first)")
        new_shape = list(self.shape)
        new_shape[axis] = size
        nv = index_vars(new_shape)
        coords = list(nv)
        coords[axis] = start + nv[axis] * step
        return self._remap(new_shape, coords)

    @_memo
    def pad(self, pads: Sequence[tuple]) -> "View":
        """pads[d] = (before, after), both >= 0; new positions are invalid (read as 0)."""
        if len(pads) != self.ndim:
            raise ViewError(f"pad needs one (before, after) pair per axis ({self.ndim}), got {len(pads)}")
        new_shape = []
        for s, (b, a) in zip(self.shape, pads):
            b, a = sym(b), sym(a)
            if b.vmin < 0 or a.vmin < 0:
                raise ViewError(f"negative padding {pads}: use slice to crop")
            new_shape.append(s + b + a)
        nv = index_vars(new_shape)
        coords, valid = [], sm.ONE
        for d, (s, (b, a)) in enumerate(zip(self.shape, pads)):
            b, a = sym(b), sym(a)
            coords.append(nv[d] - b)
            if b is not sm.ZERO:
                valid = sm.logical_and(valid, sm.ge(nv[d], b))
            if a is not sm.ZERO:
                valid = sm.logical_and(valid, sm.lt(nv[d], b + s))
        return self._remap(new_shape, coords, valid)

    @_memo
    def flip(self, axes: Sequence[int]) -> "View":
        nv = index_vars(self.shape)
        coords = [(self.shape[d] - 1 - nv[d]) if d in axes else nv[d] for d in range(self.ndim)]
        return self._remap(self.shape, coords)

    @_memo
    def unfold(self, axis: int, size: int, step: int = 1, dilation: int = 1) -> "View":
        """Sliding windows: axis of length n becomes (windows, size) with element w*step + k*dilation."""
        n = self.shape[axis]
        span = dilation * (size - 1) + 1
        windows = (n - span) // step + 1
        if windows.is_const and windows.value <= 0:
            raise ViewError(f"window of span {span} does not fit in an axis of length {n}")
        new_shape = list(self.shape[:axis]) + [windows, sym(size)] + list(self.shape[axis + 1:])
        nv = index_vars(new_shape)
        coords = nv[:axis] + [nv[axis] * step + nv[axis + 1] * dilation] + nv[axis + 2:]
        return self._remap(new_shape, coords)

    @_memo
    def dilate(self, axis: int, factor: int) -> "View":
        """Insert factor-1 invalid (zero) positions between neighbours along axis."""
        if factor == 1:
            return self
        n = self.shape[axis]
        new_shape = list(self.shape)
        new_shape[axis] = (n - 1) * factor + 1
        nv = index_vars(new_shape)
        coords = list(nv)
        coords[axis] = nv[axis] // factor
        return self._remap(new_shape, coords, sm.eq(nv[axis] % factor, 0))

    # ---------------------------------------------------------------- analysis
    def affine_strides(self) -> tuple | None:
        """(offset, strides) if index is offset + sum(stride_d * i_d) with constant... or symbolic strides."""
        iv = index_vars(self.shape)
        zero = {index_name(d): 0 for d in range(self.ndim)}
        offset = sm.substitute(self.index, zero)
        strides = []
        for d in range(self.ndim):
            strides.append(sm.substitute(self.index, {**zero, index_name(d): 1}) - offset)
        rebuilt = sm.sum_of([offset] + [s * v for s, v in zip(strides, iv)])
        if rebuilt is not self.index:
            return None
        return offset, tuple(strides)

    def __repr__(self) -> str:
        v = "" if self.valid is sm.ONE else f", valid={self.valid}"
        return f"View({sm.shape_str(self.shape)}, index={self.index}{v})"
