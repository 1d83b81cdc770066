"""The reference interpreter: evaluates any graph exactly enough to be the oracle for every test and
every search candidate.

Floating-point nodes are computed in float64; a value is rounded to a narrower float only where the
graph says so (a CAST, an input or a constant of that dtype) and, finally, when an output is returned
in its node's dtype. Integers compute in their own width (int32 wraps as it does in C), booleans as
numpy bools. Views are evaluated by running their index expressions over numpy index grids.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from . import dtypes as dt
from . import graph as g
from . import symbolic as sm
from .arrays import bind_dims, check_inputs
from .graph import Node
from .tensor import Tensor


class ReferenceError(RuntimeError):
    pass


def _compute_dtype(d: dt.DType) -> np.dtype:
    return np.dtype(np.float64) if d.is_float else d.np


def _grid(shape: tuple, env: dict) -> dict:
    dims = tuple(int(sm.evaluate(s, env)) for s in shape)
    grids = np.indices(dims, dtype=np.int64, sparse=True) if dims else []
    out = dict(env)
    for d, gr in enumerate(grids):
        out[f"_i{d}"] = gr
    return out, dims


def eval_view(src: np.ndarray, v, env: dict) -> np.ndarray:
    genv, dims = _grid(v.shape, env)
    idx = np.broadcast_to(np.asarray(sm.evaluate(v.index, genv)), dims)
    flat = src.reshape(-1)
    if v.valid is sm.ONE:
        return flat[idx] if flat.size else np.zeros(dims, src.dtype)
    valid = np.broadcast_to(np.asarray(sm.evaluate(v.valid, genv)).astype(bool), dims)
    safe = np.where(valid, idx, 0)
    out = flat[safe] if flat.size else np.zeros(dims, src.dtype)
    return np.where(valid, out, np.zeros((), src.dtype))


def _cast(x: np.ndarray, to: dt.DType) -> np.ndarray:
    if to.is_int and x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            x = np.trunc(x)
    if to.is_bool:
        return x != 0
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(to.np)
    return y.astype(np.float64) if to.is_float else y


def evaluate(outputs: list[Node], arrays: Mapping[str, np.ndarray], env: dict) -> list[np.ndarray]:
    order = g.toposort(outputs)
    vals: dict = {}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for n in order:
            s = [vals[x] for x in n.srcs]
            op = n.op
            if op == g.INPUT:
                v = arrays[n.arg].astype(_compute_dtype(n.dtype))
            elif op == g.CONST:
                v = np.array(n.arg, dtype=n.dtype.np).astype(_compute_dtype(n.dtype))
            elif op == g.DATA:
                v = n.arg.array.astype(_compute_dtype(n.dtype))
            elif op == g.IOTA:
                genv, dims = _grid(n.shape, env)
                v = np.broadcast_to(np.asarray(sm.evaluate(n.arg, genv)), dims).astype(n.dtype.np)
                v = v.astype(_compute_dtype(n.dtype))
            elif op == g.EXP2:
                v = np.exp2(s[0])
            elif op == g.LOG2:
                v = np.log2(s[0])
            elif op == g.SIN:
                v = np.sin(s[0])
            elif op == g.SQRT:
                v = np.sqrt(s[0])
            elif op == g.RECIP:
                v = 1.0 / s[0]
            elif op == g.ADD:
                v = s[0] + s[1]
            elif op == g.MUL:
                v = np.logical_and(s[0], s[1]) if n.dtype.is_bool else s[0] * s[1]
            elif op == g.MOD:
                v = np.fmod(s[0], s[1])
            elif op == g.LT:
                v = s[0] < s[1]
            elif op == g.WHERE:
                v = np.where(s[0], s[1], s[2])
            elif op == g.SUM:
                v = np.sum(s[0], axis=n.arg, keepdims=True, dtype=_compute_dtype(n.dtype)
                           if n.dtype.is_float else np.int64).astype(_compute_dtype(n.dtype))
            elif op == g.MAX:
                if s[0].size == 0:
                    v = np.full(tuple(int(sm.evaluate(d, env)) for d in n.shape), dt.min_value(n.dtype),
                                _compute_dtype(n.dtype))
                else:
                    v = np.max(s[0], axis=n.arg, keepdims=True)
            elif op == g.VIEW:
                v = eval_view(s[0], n.arg, env)
            elif op == g.GATHER:
                data, idx = s[0].reshape(-1), s[1].astype(np.int64)
                if idx.size and (idx.min() < 0 or idx.max() >= data.size):
                    bad = idx[(idx < 0) | (idx >= data.size)][0]
                    raise IndexError(f"gather index {bad} out of range for a source of {data.size} elements")
                v = data[idx]
            elif op == g.CAST:
                v = _cast(s[0], n.dtype)
            else:  # pragma: no cover
                raise ReferenceError(f"unknown op {op}")
            vals[n] = np.asarray(v)
    return [vals[o] for o in outputs]


def _collect(y):
    if isinstance(y, Tensor):
        return [y], lambda r: r[0]
    if isinstance(y, dict):
        keys = list(y)
        return [y[k] for k in keys], lambda r: dict(zip(keys, r))
    if isinstance(y, (list, tuple)):
        return list(y), tuple
    raise TypeError(f"expected a Tensor, or a list/tuple/dict of Tensors; got {type(y).__name__}")


def reference(y, /, **inputs):
    """Evaluate tensor(s) y with numpy. Inputs are given by name; named dimensions are bound from
    the input shapes. Returns numpy arrays in the outputs' dtypes. (y is positional-only, so an
    input may itself be named "y".)"""
    ts, pack = _collect(y)
    nodes = [t.node if isinstance(t, Tensor) else t for t in ts]
    ins = g.inputs_of(nodes)
    arrays = check_inputs(ins, inputs)
    env = bind_dims(ins, arrays)
    missing = [d for d in g.symbolic_dims(nodes) if d not in env]
    if missing:
        raise ReferenceError(f"symbolic dimension(s) {missing} are not fixed by any input's shape")
    vals = evaluate(nodes, arrays, env)
    out = [_cast(v, n.dtype).astype(n.dtype.np) if n.dtype.is_float else v.astype(n.dtype.np)
           for v, n in zip(vals, nodes)]
    return pack(out)
