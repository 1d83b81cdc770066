"""State writes: a program that stores a value into one of its inputs in place (a KV cache's new
rows), instead of returning a new copy of the whole state.

    cache = em.input("k_cache", (B, H, 4096, D), em.bfloat16)       # the whole state, a graph input
    w = em.state_write(cache, k_new, axis=2, start="P")            # k_new at [P, P + T) along axis 2
    keys = em.narrow_to(w.updated, 2, sm.dim("P") + T)             # the state after the write, read
    prog = em.compile(out, writes=[w])
    prog.run({"k_cache": cache_array, ...}, dims={"P": 17})       # k_new lands in cache_array[:, :, 17:17+T]

The program's meaning is its outputs computed from the inputs as they were at the call; the write
happens as a side effect: `w.updated`, the state after the write, is a tensor like any other (the
reference computes it as where(inside, value, state)), materialised in the state's own memory by a
kernel over the written region only, so a write costs the new rows, not a copy of the state. Read
the state through `w.updated` only: a kernel reading the input `cache` itself may run after the
write has landed (outside the written region both agree)."""
from __future__ import annotations

from typing import NamedTuple

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..tensor import ShapeError, Tensor, where

__all__ = ["state_write", "StateWriteSpec", "narrow_to"]


class StateWriteSpec(NamedTuple):
    state: Tensor  # a graph input
    updated: Tensor  # the state after the write (what the program reads)
    axis: int
    start: sm.Expr
    extent: sm.Expr


def state_write(state: Tensor, value: Tensor, axis: int, start) -> StateWriteSpec:
    """Describe writing `value` into graph input `state` at [start, start + value.shape[axis]) along
    `axis` (`start`: an int or a named dimension bound when the program runs). `.updated` is the
    state after the write, a tensor of the state's shape: read the new rows (and the old) from it."""
    if not isinstance(state, Tensor) or state.node.op != g.INPUT:
        raise ShapeError("state_write: the state must be a graph input (em.input)")
    if not isinstance(value, Tensor):
        raise ShapeError(f"state_write: the value must be a Tensor, got {type(value).__name__}")
    if value.ndim != state.ndim:
        raise ShapeError(f"state_write: value of rank {value.ndim} into a state of rank {state.ndim}")
    ax = axis + state.ndim if axis < 0 else axis
    if not 0 <= ax < state.ndim:
        raise ShapeError(f"state_write: axis {axis} out of range for rank {state.ndim}")
    for d, (a, b) in enumerate(zip(value.node.shape, state.node.shape)):
        if d != ax and a is not b:
            raise ShapeError(f"state_write: value shape {sm.shape_str(value.node.shape)} differs from the state's "
                             f"{sm.shape_str(state.node.shape)} outside axis {ax}")
    start, extent, n = sm.sym(start), value.node.shape[ax], state.node.shape[ax]
    i = sm.index_var(f"_i{ax}", n)  # the position along the axis, as an index expression
    inside = sm.logical_and(sm.le(start, i), sm.lt(i, start + extent))
    coords = [sm.index_var(f"_i{d}", s) for d, s in enumerate(state.node.shape)]
    coords[ax] = i - start
    # the value seen at the state's coordinates (a pad by `start` whose far side is only known at
    # run time, so View.pad, which proves its pads non-negative, cannot build it)
    placed = Tensor(g.apply_view(value.cast(state.dtype).node,
                                 lambda v: v._remap(state.node.shape, coords, inside)))
    mask = Tensor(g.iota_node(state.node.shape, inside, dt.bool_))
    return StateWriteSpec(state, where(mask, placed, state), ax, start, extent)


def narrow_to(x: Tensor, axis: int, length) -> Tensor:
    """x[..., :length, ...] along `axis` for a length that may be a named dimension, taken as at most
    the axis's extent (the caller guarantees it: a program checks its write offsets at run time).
    Unlike slicing, no min(length, extent) enters the shape."""
    from .movement import _slice_axis
    ax = axis + x.ndim if axis < 0 else axis
    return _slice_axis(x, ax, sm.ZERO, sm.sym(length), 1)
