"""Un-viewing (the gradient of a VIEW w.r.t. its source). A View maps each output coordinate ``i`` to a
flat source position ``index(i)`` when ``valid(i)``. The source gradient at flat position ``j`` is the
sum of ``g[i]`` over every valid ``i`` with ``index(i) == j``. `unview` builds that sum exactly for any
View, as a new View over ``g`` (plus reductions), in four steps:

1. *Broadcast axes* (index and validity ignore the coordinate; expand): sum ``g`` over them first.
2. *Validity-pinned axes* (the coordinate only appears in the validity, which allows a contiguous
   range of values, e.g. a dilation's ``i % f == 0`` after a split): slice ``g`` to that range.
3. *Splits and merges*: where the index divides a coordinate by a constant or a named dimension
   (a reshape of a permuted view produces ``i // B`` and ``i % B``), reshape ``g`` to split that
   axis — padding it with zeros when the divisor does not divide the extent, merging adjacent axes
   first when the division reads them as one flat index — so the index becomes affine in the new
   axes. Moves are chosen greedily on the cost of step 4. With named dimensions the index is first
   re-simplified (`_resimplify`) where the canonical simplifier stops short.
4. *Inversion*: every axis whose coordinate enters the index linearly with a constant non-zero
   stride is a candidate for a *chain*: a set of axes whose positions an offset determines uniquely,
   recovered by floor division and remainder (a negative stride by flipping). A chain is the
   largest-extent subset whose strides each exceed the span of the smaller ones; the remaining axes
   are *enumerated*. Preferably the index is written as Σ stride_d · c_d(i) over the source axes,
   each coordinate ``c_d`` provably inside its axis wherever the view is valid, and each source axis
   is solved on its own (this keeps slices, pads, unfolds and permutes as clean per-axis index
   expressions); otherwise one chain is solved against the flat offset. The result is a view of
   ``g`` with shape ``source shape + enumerated extents``, whose index solves for the chain
   coordinates and whose validity checks the solution (in range, zero remainder, original
   validity), followed by a sum over the enumerated axes.

Cost: (source elements) × (product of enumerated extents). Permute, reshape, reshape of a permuted
view, slice, pad, flip, dilate: nothing is enumerated — the result is a single view (permute ->
inverse permute, slice -> pad, pad -> slice, flip -> flip, dilate -> strided slice). Expand: a sum
over the broadcast axes. Unfold (sliding windows, convolution): the kernel axes are enumerated, i.e.
col2im as a sum over kernel offsets, cost N·K. Anything else falls back on enumerating every axis:
the validity becomes the equality mask ``j == index(i)`` — a one-hot contraction over the index
expression, cost N·M for a view of M elements over N. It is always correct, only slower.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from .. import graph as g
from .. import symbolic as sm
from ..graph import Node
from ..symbolic import Expr, sym
from ..tensor import full
from ..view import View, index_name, row_major_strides
from .indexing import _Pending, _remap, _resimplify, _var
from .invert import _atoms, _divide, _invert, _Plan, _plan


def _normalize(p: _Pending) -> _Pending | None:
    """Steps 1-2 of the module docstring, plus dropping unit axes. None: the gradient is zero."""
    if any(not s.is_const for s in p.shape):
        # the index is read only where the validity holds, so its conjuncts may be assumed there
        p = _Pending(p.node, p.shape, _resimplify(p.index, _atoms(p.valid)), _resimplify(p.valid))
    sub = {index_name(d): 0 for d, s in enumerate(p.shape) if s is sm.ONE}
    if sub:
        p = _Pending(p.node, p.shape, sm.substitute(p.index, sub), sm.substitute(p.valid, sub))
    if p.valid is sm.ZERO:
        return None
    in_index, in_valid = p.names()
    bcast = [d for d, s in enumerate(p.shape) if s is not sm.ONE and index_name(d) not in in_index | in_valid]
    if bcast:
        node = g.reduce_node(g.SUM, p.node, bcast)
        p = _Pending(node, [sm.ONE if d in bcast else s for d, s in enumerate(p.shape)], p.index, p.valid)
    # axes seen only by the validity: keep the contiguous range of values it allows
    for d, s in enumerate(p.shape):
        name = index_name(d)
        if s is sm.ONE or name in in_index or name not in in_valid or not s.is_const or s.value > 256:
            continue
        allowed = [a for a in range(s.value) if sm.substitute(p.valid, {name: a}) is not sm.ZERO]
        if not allowed:
            return None
        lo, hi = allowed[0], allowed[-1] + 1
        if hi - lo == s.value or allowed != list(range(lo, hi)):
            continue
        shape = list(p.shape)
        shape[d] = sym(hi - lo)
        coords = [_var(k, shape[k]) for k in range(len(shape))]
        coords[d] = coords[d] + lo
        node = _remap(p.node, shape, coords)
        m = {name: coords[d]}
        return _normalize(_Pending(node, shape, sm.substitute(p.index, m), sm.substitute(p.valid, m)))
    return p


def _divmods(p: _Pending) -> list[tuple[Expr, Expr]]:
    """(numerator, divisor) of every floor division and modulo in the index and validity."""
    found, seen, stack = [], set(), [p.index, p.valid]
    while stack:
        e = stack.pop()
        if e in seen or e.op in ("const", "var"):
            continue
        seen.add(e)
        if e.op == "add":
            stack.extend(t for t, _ in e.args[1])
            continue
        stack.extend(e.args)
        if e.op in ("div", "mod"):
            found.append((e.args[0], e.args[1]))
    return found


def _axis_terms(num: Expr, ndim: int) -> dict:
    """{axis: coefficient} of the index variables in a linear numerator."""
    terms = dict(num.args[1]) if num.op == "add" else {num: 1}
    return {int(t.args[0][2:]): k for t, k in terms.items()
            if t.op == "var" and t.args[0].startswith("_i") and int(t.args[0][2:]) < ndim}


def _split_candidates(p: _Pending) -> list[tuple[int, Expr]]:
    """(axis, divisor) pairs: the index or validity divides that axis's coordinate by the divisor."""
    found = set()
    for num, c in _divmods(p):
        for d, k in _axis_terms(num, len(p.shape)).items():
            n = p.shape[d]
            if c.is_const:
                cd = c.value // math.gcd(c.value, abs(k))
                if cd > 1 and (not n.is_const or cd < n.value):
                    found.add((d, sym(cd)))  # padded to a multiple of cd when it does not divide n
            elif k == 1 and n is not c and _divide(n, c) is not None:
                found.add((d, c))
    return sorted(found, key=lambda dc: (dc[0], dc[1].key))


def _merge_candidates(p: _Pending) -> list[tuple[int, int]]:
    """Runs of adjacent axes [a, b] that a division's numerator reads as one row-major flat index
    (a reshape of a reshape): merging them first lets a split cut them where the division does."""
    found = set()
    for num, _ in _divmods(p):
        terms = _axis_terms(num, len(p.shape))
        if len(terms) < 2:
            continue
        a, b = min(terms), max(terms)
        if sorted(terms) != list(range(a, b + 1)):
            continue
        w = terms[b]
        if all(terms[d] is not None and sm.sym(terms[d]) is sm.prod([w] + p.shape[d + 1:b + 1]) for d in terms):
            found.add((a, b))
    return sorted(found)


def _merge(p: _Pending, a: int, b: int) -> _Pending:
    run = p.shape[a:b + 1]
    n = sm.prod(run)
    new_shape = p.shape[:a] + [n] + p.shape[b + 1:]
    node = g.apply_view(p.node, lambda v: v.reshape(new_shape))
    k = _var(a, n)
    m = {index_name(d): (k // st) % s if d > a else k // st
         for d, s, st in zip(range(a, b + 1), run, row_major_strides(run))}
    m |= {index_name(d): _var(d - (b - a), p.shape[d]) for d in range(b + 1, len(p.shape))}
    return _Pending(node, new_shape, sm.substitute(p.index, m), sm.substitute(p.valid, m))


def _split(p: _Pending, d: int, c: Expr) -> _Pending:
    """Replace axis d (extent n) by (ceil(n / c), c); pads the gradient with zeros if c ∤ n."""
    n = p.shape[d]
    node, shape = p.node, list(p.shape)
    q = _divide(n, c)
    padded = q is None  # only for constant divisors (see _split_candidates)
    if padded:
        q = (n + (c - 1)) // c
    if padded:
        shape[d] = q * c
        coords = [_var(k, shape[k]) for k in range(len(shape))]
        node = _remap(node, shape, coords, sm.lt(coords[d], n))
    new_shape = shape[:d] + [q, c] + shape[d + 1:]
    node = g.apply_view(node, lambda v: v.reshape(new_shape)) if node.shape != tuple(new_shape) else node
    m = {index_name(k): _var(k + 1, shape[k]) for k in range(d + 1, len(shape))}
    qd = _var(d, q) * c + _var(d + 1, c)
    m[index_name(d)] = qd
    valid = sm.substitute(p.valid, m)
    if padded:
        valid = sm.logical_and(valid, sm.lt(qd, n))
    return _Pending(node, new_shape, sm.substitute(p.index, m), valid)


def unview(gn: Node, view: View, src_shape: Sequence, *, max_splits: int = 8, force_fallback: bool = False) -> Node:
    """Gradient w.r.t. a VIEW's source (shape ``src_shape``) given ``gn``, the gradient of the view.

    ``force_fallback`` skips the analysis and enumerates every axis (the one-hot contraction); tests
    use it to check the analysis against the always-correct construction."""
    src_shape = tuple(sym(s) for s in src_shape)
    zero = full(src_shape, 0.0, gn.dtype).node
    if any(s is sm.ZERO for s in src_shape) or any(s is sm.ZERO for s in view.shape):
        return zero
    p = _Pending(gn, list(view.shape), view.index, view.valid)
    if force_fallback:
        enum = [d for d, s in enumerate(p.shape) if s is not sm.ONE]
        return _invert(p, _Plan(0.0, enum, chain=[]), src_shape)
    p = _normalize(p)
    if p is None:
        return zero
    plan = _plan(p, src_shape)
    for _ in range(max_splits):
        if not plan.enum:
            break
        best = None
        moves = [(p, d, c) for d, c in _split_candidates(p)]
        for a, b in _merge_candidates(p):  # a merge helps only together with a split after it
            merged = _merge(p, a, b)
            moves += [(merged, d, c) for d, c in _split_candidates(merged)]
        for base, d, c in moves:
            q = _normalize(_split(base, d, c))
            if q is None:
                return zero
            qplan = _plan(q, src_shape)
            if qplan.cost < plan.cost and (best is None or qplan.cost < best[1].cost):
                best = (q, qplan)
        if best is None:
            break
        p, plan = best
    return _invert(p, plan, src_shape)
