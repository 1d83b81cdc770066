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
from . import primitives as P
from . import symbolic as sm
from .arrays import bind_dims, check_inputs
from .graph import Node
from .primitives.elementwise import cast_array
from .tensor import Tensor


class ReferenceError(RuntimeError):
    pass


def _compute_dtype(d: dt.DType) -> np.dtype:
    return np.dtype(np.float64) if d.is_float else d.np


def _dims(shape: tuple, env: dict) -> tuple:
    return tuple(int(sm.evaluate(s, env)) for s in shape)


def _grid(shape: tuple, env: dict):
    """env extended with sparse index grids _i0.. over `shape` (each has size 1 on all other axes)."""
    dims = _dims(shape, env)
    grids = np.indices(dims, dtype=np.int64, sparse=True) if dims else []
    out = dict(env)
    for d, gr in enumerate(grids):
        out[f"_i{d}"] = gr
    return out, dims


def _nd(a, ndim: int) -> np.ndarray:
    """A value as an array of rank `ndim` (scalars become (1,)*ndim), keeping size-1 broadcast axes."""
    a = np.asarray(a)
    return a.reshape((1,) * (ndim - a.ndim) + a.shape) if a.ndim < ndim else a


# Values are kept *compressed*: an axis along which a value is constant (a broadcast) has size 1 in
# the array, so expand views cost nothing and a sum of a broadcast product is an einsum of its
# operands instead of a materialised (M, N, K) tensor.


def _view(src: np.ndarray, src_dims: tuple, v, env: dict) -> np.ndarray:
    genv, dims = _grid(v.shape, env)
    nd = len(dims)
    idx = _nd(sm.evaluate(v.index, genv), nd)
    if src.size == 0:
        return np.zeros(dims, src.dtype)
    flat = src.reshape(-1) if src.shape == src_dims else None  # else: compressed, use coordinates
    valid = None if v.valid is sm.ONE else _nd(sm.evaluate(v.valid, genv), nd).astype(bool)
    safe = idx if valid is None else np.where(valid, idx, 0)
    if flat is not None:
        out = flat[safe]
    else:
        coords, stride = [], 1
        strides = []
        for n in reversed(src_dims):
            strides.append(stride)
            stride *= n
        strides = strides[::-1]
        for d, (n, st) in enumerate(zip(src_dims, strides)):
            coords.append((safe // st) % n if src.shape[d] != 1 else np.zeros((1,) * nd, np.int64))
        out = src[tuple(coords)] if src_dims else src[()]
    return out if valid is None else np.where(valid, out, np.zeros((), src.dtype))


def eval_view(src: np.ndarray, v, env: dict) -> np.ndarray:
    """A view of a full (uncompressed) source array, as a full array."""
    return np.broadcast_to(_view(src, src.shape, v, env), _dims(v.shape, env)).copy()


def _sum(x: np.ndarray, axes: tuple, full: tuple, dtype) -> np.ndarray:
    """keepdims sum of a compressed array over `axes` of the full shape `full`."""
    real = tuple(a for a in axes if x.shape[a] != 1)
    r = np.sum(x, axis=real, keepdims=True, dtype=dtype) if real else x.astype(dtype)
    factor = 1
    for a in axes:
        if x.shape[a] == 1:
            factor *= full[a]
    return r * factor if factor != 1 else r


def _contract(a: np.ndarray, b: np.ndarray, axes: tuple, full: tuple) -> np.ndarray:
    """sum over `axes` of a*b (both compressed, rank len(full)) via einsum, keepdims."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    nd = len(full)
    ka = [d for d in range(nd) if a.shape[d] != 1]
    kb = [d for d in range(nd) if b.shape[d] != 1]
    out = [d for d in range(nd) if d not in axes and (d in ka or d in kb)]
    spec = f"{''.join(letters[d] for d in ka)},{''.join(letters[d] for d in kb)}->{''.join(letters[d] for d in out)}"
    r = np.einsum(spec, a.reshape([a.shape[d] for d in ka]), b.reshape([b.shape[d] for d in kb]), optimize=True)
    factor = 1
    for d in axes:
        if d not in ka and d not in kb:
            factor *= full[d]
    shape = [full[d] if d in out else 1 for d in range(nd)]
    r = r.reshape(shape)
    return r * factor if factor != 1 else r


def evaluate(outputs: list[Node], arrays: Mapping[str, np.ndarray], env: dict) -> list[np.ndarray]:
    """Output values (full arrays) of the graph, given input arrays and the dims binding."""
    order = g.toposort(outputs)
    cons = g.consumers(order)
    outs = set(outputs)
    lazy = {n for n in order if n.op == g.MUL and n not in outs and cons[n]
            and all(c.op == g.SUM for c in cons[n]) and not n.dtype.is_bool}
    vals: dict = {}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for n in order:
            if n in lazy:
                continue
            s = [vals.get(x) for x in n.srcs]
            op = n.op
            nd = len(n.shape)
            if op == g.INPUT:
                v = arrays[n.arg].astype(_compute_dtype(n.dtype))
            elif op == g.CONST:
                v = np.array(n.arg, dtype=n.dtype.np).astype(_compute_dtype(n.dtype))
            elif op == g.DATA:
                v = n.arg.array.astype(_compute_dtype(n.dtype))
            elif op == g.IOTA:
                genv, dims = _grid(n.shape, env)
                v = _nd(sm.evaluate(n.arg, genv), nd).astype(n.dtype.np).astype(_compute_dtype(n.dtype))
            elif P.GRAPH[op].numpy is not None:  # elementwise: the primitive's own numpy form
                v = P.GRAPH[op].numpy(n, *s)
            elif op == g.SUM:
                full = _dims(n.srcs[0].shape, env)
                acc = _compute_dtype(n.dtype) if n.dtype.is_float else np.int64
                if n.srcs[0] in lazy:
                    m = n.srcs[0]
                    v = _contract(vals[m.srcs[0]], vals[m.srcs[1]], n.arg, full).astype(acc)
                else:
                    v = _sum(s[0], n.arg, full, acc)
                v = v.astype(_compute_dtype(n.dtype))
            elif op == g.MAX:
                full = _dims(n.srcs[0].shape, env)
                if any(full[a] == 0 for a in n.arg):
                    v = np.full(_dims(n.shape, env), dt.min_value(n.dtype), _compute_dtype(n.dtype))
                else:
                    real = tuple(a for a in n.arg if s[0].shape[a] != 1)
                    v = np.max(s[0], axis=real, keepdims=True) if real else s[0]
            elif op == g.VIEW:
                v = _view(s[0], _dims(n.srcs[0].shape, env), n.arg, env)
            elif op == g.GATHER:
                data = np.broadcast_to(s[0], _dims(n.srcs[0].shape, env)).reshape(-1)
                idx = s[1].astype(np.int64)
                if idx.size and (idx.min() < 0 or idx.max() >= data.size):
                    bad = idx[(idx < 0) | (idx >= data.size)][0]
                    raise IndexError(f"gather index {bad} out of range for a source of {data.size} elements")
                v = data[idx]
            elif op == g.COLLECTIVE:  # every rank evaluates the same collectives in the same order
                from .comm import require
                from .primitives.collective import parse
                c = parse(n.arg)
                x = np.ascontiguousarray(np.broadcast_to(s[0], _dims(n.srcs[0].shape, env)))
                comm = require(c.world)
                v = comm.all_reduce(x) if c.kind == "all_reduce" else comm.all_gather(x)
            else:  # pragma: no cover
                raise ReferenceError(f"unknown op {op}")
            vals[n] = _nd(v, nd)
    return [np.broadcast_to(vals[o], _dims(o.shape, env)) for o in outputs]


def _collect(y):
    if isinstance(y, Tensor):
        return [y], lambda r: r[0]
    if isinstance(y, dict):
        keys = list(y)
        return [y[k] for k in keys], lambda r: dict(zip(keys, r))
    if isinstance(y, (list, tuple)):
        return list(y), tuple
    raise TypeError(f"expected a Tensor, or a list/tuple/dict of Tensors; got {type(y).__name__}")


def reference(y, dims=None, /, **inputs):
    """Evaluate tensor(s) y with numpy. Inputs are given by name; named dimensions are bound from
    the input shapes, and those no shape fixes from `dims` ({name: int}, a KV cache's filled length).
    Returns numpy arrays in the outputs' dtypes. (y and dims are positional-only, so an input may
    itself be named "y" or "dims".)"""
    ts, pack = _collect(y)
    nodes = [t.node if isinstance(t, Tensor) else t for t in ts]
    ins = g.inputs_of(nodes)
    arrays = check_inputs(ins, inputs)
    env = bind_dims(ins, arrays, dict(dims or {}))
    missing = [d for d in g.symbolic_dims(nodes) if d not in env]
    if missing:
        raise ReferenceError(f"symbolic dimension(s) {missing} are not fixed by any input's shape")
    vals = evaluate(nodes, arrays, env)
    out = [cast_array(v, n.dtype).astype(n.dtype.np) if n.dtype.is_float else v.astype(n.dtype.np)
           for v, n in zip(vals, nodes)]
    return pack(out)
