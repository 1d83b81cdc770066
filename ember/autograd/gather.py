"""The gradient of GATHER: a scatter-add of the incoming gradient into the data's flat positions."""
from __future__ import annotations

import math

from .. import graph as g
from .. import symbolic as sm
from ..graph import Node
from ..symbolic import sym
from ..tensor import Tensor, full, iota, where
from ..view import View, index_name
from .indexing import _remap, _unflatten, _var
from .unview import unview


def _decompose(n: Node):
    """The integer tensor n as (expr, [(node_k, c_k)]): n == expr(indices) + sum_k c_k * node_k, with
    expr symbolic (from IOTA, integer constants, and arithmetic and views of them) and node_k the
    data-dependent parts (each of n's shape). Anything unrecognised is one opaque term."""
    if n.op == g.IOTA:
        return n.arg, []
    if n.op == g.CONST and n.dtype.is_int:
        return sym(n.arg), []
    if n.op == g.CAST and n.dtype.is_int and n.srcs[0].dtype.is_int:
        return _decompose(n.srcs[0])
    if n.op == g.ADD:
        ea, ta = _decompose(n.srcs[0])
        eb, tb = _decompose(n.srcs[1])
        return ea + eb, ta + tb
    if n.op == g.MUL and n.dtype.is_int:
        ea, ta = _decompose(n.srcs[0])
        eb, tb = _decompose(n.srcs[1])
        if not ta and not tb:
            return ea * eb, []
        if not ta and ea.is_const:
            return eb * ea, [(t, c * ea.value) for t, c in tb]
        if not tb and eb.is_const:
            return ea * eb, [(t, c * eb.value) for t, c in ta]
    if n.op == g.VIEW and n.arg.valid is sm.ONE:
        src, v = n.srcs[0], n.arg
        e, terms = _decompose(src)
        coords = _unflatten(v.index, src.shape)
        e = sm.substitute(e, {index_name(d): c for d, c in enumerate(coords)})
        return e, [(_remap(t, v.shape, coords), c) for t, c in terms]
    return sm.ZERO, [(n, 1)]


def gather_vjp(gn: Node, data: Node, index: Node) -> Node:
    """Scatter-add of gn into data's flat positions, from primitives (there is no scatter).

    The index is split as ``expr + c·T`` (expr symbolic, T data-dependent). A static index map (no
    T) is a view: un-viewed exactly, like any VIEW. Otherwise with ``0 <= expr < c`` (an embedding
    or index_select: T the row, expr the column) the flat position is ``q·c + expr`` with
    ``q == T``: a one-hot H[i, q] = g[i]·(T[i] == q) over the Q = ceil(N / c) rows, then the
    static map (i, q) -> q·c + expr(i) un-viewed — for an embedding this sums H over the lookups,
    the contraction one_hotᵀ @ g, cost M·Q (M = elements of the index). Anything else is the plain
    one-hot contraction over all N source elements: cost M·N."""
    expr, terms = _decompose(index)
    numel = data.numel
    if not terms:
        return unview(gn, View(index.shape, expr, sm.ONE), data.shape)
    coefs = [c for _, c in terms]
    c = math.gcd(*coefs) if all(c > 0 for c in coefs) else 1
    if c > 1 and expr.vmin >= 0 and expr.vmax < c and numel.is_const:
        T = None
        for t, k in terms:
            part = Tensor(t) if k == c else Tensor(t) * (k // c)
            T = part if T is None else T + part
        rows = sm.sym(-(-numel.value // c))
    else:
        T, expr, c, rows = Tensor(index), sm.ZERO, 1, numel
    shape = tuple(index.shape) + (rows,)
    hit = T.unsqueeze(-1).broadcast_to(shape) == iota(shape, -1).cast(T.dtype)
    H = where(hit, Tensor(gn).unsqueeze(-1).broadcast_to(shape), full(shape, 0.0, gn.dtype))
    flat = _var(len(index.shape), rows) * c + expr
    out = unview(H.node, View(shape, flat, sm.ONE), (numel,))
    return g.apply_view(out, lambda v: v.reshape(data.shape)) if data.shape != (numel,) else out
