"""Inverting an index that is affine in some axes: choosing a chain of axes that an offset determines
uniquely, planning per source axis or against the flat offset, and building the inverted view (see
unview.py's docstring, step 4)."""
from __future__ import annotations

import itertools
import math

from .. import graph as g
from .. import symbolic as sm
from ..graph import Node
from ..symbolic import Expr, sym
from ..view import index_name, row_major_strides
from .indexing import (
    _const_multiple,
    _estimate,
    _exact_quotient,
    _index_names,
    _Pending,
    _remap,
    _var,
)


def _abs(st: Expr) -> Expr:
    return st if st.vmin > 0 else -st


def _best_chain(cands: list, shape: list) -> tuple[list, list]:
    """Split candidate (axis, stride) pairs into (chain, rest): the chain is the subset of largest total
    extent whose positions a sum ``r = Σ |stride|·i`` determines uniquely — sorted by |stride|, each
    |stride| exceeds the span of the smaller ones — returned sorted by |stride| descending."""
    def ok(chain) -> bool:
        span = sm.ZERO
        for d, st in sorted(chain, key=lambda ds: _estimate(_abs(ds[1]))):
            if not sm.prove_lt(span, _abs(st)):
                return False
            span = span + _abs(st) * (shape[d] - 1)
        return True

    ext = {d: _estimate(shape[d]) for d, _ in cands}
    if len(cands) <= 12:
        subsets = [ch for r in range(len(cands) + 1) for ch in itertools.combinations(cands, r)]
        subsets.sort(key=lambda ch: -math.prod(ext[d] for d, _ in ch))
        best = next(list(ch) for ch in subsets if ok(ch))
    else:  # greedy: smallest strides first, enumerate whatever breaks uniqueness
        best = []
        for cand in sorted(cands, key=lambda ds: _estimate(_abs(ds[1]))):
            if ok(best + [cand]):
                best.append(cand)
    chosen = {d for d, _ in best}
    best.sort(key=lambda ds: -_estimate(_abs(ds[1])))
    return best, [c for c in cands if c[0] not in chosen]


def _linear_axes(p: _Pending) -> tuple[dict, list]:
    """({axis: stride} for axes entering the index linearly with a constant non-zero stride,
    [other non-unit axes])."""
    in_index, _ = p.names()
    lin, other = {}, []
    for d, s in enumerate(p.shape):
        if s is sm.ONE:
            continue
        name = index_name(d)
        if name not in in_index:
            other.append(d)
            continue
        stride = sm.substitute(p.index, {name: 1}) - sm.substitute(p.index, {name: 0})
        rest = p.index - stride * _var(d, s)
        if _index_names(stride) or name in _index_names(rest) or not (stride.vmin > 0 or stride.vmax < 0):
            other.append(d)
        else:
            lin[d] = stride
    return lin, other


def _atoms(valid: Expr) -> list[Expr]:
    """Lower bounds ``B - A - 1 >= 0`` from the ``A < B`` conjuncts of a validity expression."""
    out, stack = [], [valid]
    while stack:
        e = stack.pop()
        if e.op == "and":
            stack.extend(e.args)
        elif e.op == "lt":
            out.append(e.args[1] - e.args[0] - 1)
    return out


def _in_range(c: Expr, hi: Expr, atoms: list) -> bool:
    """Whether 0 <= c <= hi wherever the validity holds (from bounds, or from one of its atoms)."""
    lower = sm.prove_le(0, c) or any(sm.prove_le(a, c) for a in atoms)
    upper = sm.prove_le(c, hi) or any(sm.prove_le(c, hi - a) for a in atoms)
    return lower and upper


def _divide(a: Expr, b: Expr) -> Expr | None:
    """a / b if b divides every term of a exactly (structurally), else None."""
    if b.is_const:
        if a.is_const:
            return sym(a.value // b.value) if a.value % b.value == 0 else None
        b_val = b.value
        c0, terms = (a.args[0], a.args[1]) if a.op == "add" else (0, ((a, 1),))
        if c0 % b_val or any(k % b_val for _, k in terms):
            return None
        return sm.sum_of([c0 // b_val] + [t * (k // b_val) for t, k in terms])
    if b.op == "add" and (b.args[0] != 0 or len(b.args[1]) > 1):  # a sum such as S - 1
        m = _const_multiple(a, b)
        return sym(m) if m is not None else None
    if a.is_const or (a.op == "add" and a.args[0] != 0):
        return None
    out = sm.ZERO
    for t, k in (a.args[1] if a.op == "add" else ((a, 1),)):
        q = _exact_quotient(t, k, b)
        if q is None:
            return None
        out = out + q
    return out


class _Plan:
    """How to invert: cost, and either one flat chain or one chain per source axis."""

    def __init__(self, cost: float, enum: list, chain=None, per_axis=None):
        self.cost, self.enum, self.chain, self.per_axis = cost, enum, chain, per_axis


def _plan_flat(p: _Pending, lin: dict, other: list, src_shape: tuple) -> _Plan:
    chain, rest = _best_chain(list(lin.items()), p.shape)
    enum = sorted(other + [d for d, _ in rest])
    cost = _estimate(sm.prod(src_shape)) * math.prod(_estimate(p.shape[d]) for d in enum)
    return _Plan(cost, enum, chain=chain)


def _plan_per_axis(p: _Pending, lin: dict, other: list, src_shape: tuple) -> _Plan | None:
    """Write index = Σ_d stride_d · c_d(i) with each source coordinate c_d an affine expression of the
    view axes that stays in [0, X_d) wherever the view is valid; then ``index(i) == j`` exactly when
    every ``c_d(i)`` equals j's coordinate, and each source axis is inverted on its own. This keeps
    slices, pads, unfolds and permutes as clean per-axis index expressions."""
    if any(index_name(d) in _index_names(p.index) for d in other):
        return None  # a non-linear axis in the index
    strides = row_major_strides(src_shape)
    axes = [d for d, s in enumerate(src_shape) if s is not sm.ONE]
    if not axes:
        return None
    assign: dict = {d: [] for d in range(len(src_shape))}
    for k, st in lin.items():
        for d in axes:
            coef = _divide(st, strides[d])
            if coef is not None:
                assign[d].append((k, coef))
                break
        else:
            return None
    # distribute the offset: symbolic terms by the same divisibility, the constant by digits
    off = sm.substitute(p.index, {index_name(d): 0 for d in range(len(p.shape))})
    const, terms = (off.args[0], dict(off.args[1])) if off.op == "add" else ((off.value, {}) if off.is_const else (0, {off: 1}))
    offs: dict = {d: sm.ZERO for d in range(len(src_shape))}
    for t, k in terms.items():
        for d in axes:
            coef = _divide(t * k, strides[d])
            if coef is not None:
                offs[d] = offs[d] + coef
                break
        else:
            return None
    if not all(strides[d].is_const for d in axes):
        if const:
            return None
    atoms = _atoms(p.valid)
    rem = const
    for d in reversed(range(len(src_shape))):
        var_part = sm.sum_of(_var(k, p.shape[k]) * coef for k, coef in assign[d])
        if src_shape[d] is sm.ONE:
            if not sm.prove_le(0, var_part) or not sm.prove_le(var_part, 0):
                return None
            continue
        st, X = strides[d].value if strides[d].is_const else None, src_shape[d]
        if st is None or rem % st:
            if rem:
                return None
            choices = [0]
        else:
            base = rem // st
            choices = [base] if d == axes[0] else (
                [base % X.value + t * X.value for t in (0, -1, 1, -2)] if X.is_const else [base])
        for o in choices:
            if _in_range(offs[d] + o + var_part, X - 1, atoms):
                offs[d] = offs[d] + o
                rem -= o * (st or 0)
                break
        else:
            return None
    if rem:
        return None
    per_axis, enum = {}, list(other)
    for d in axes:
        chain, rest = _best_chain(assign[d], p.shape)
        per_axis[d] = (offs[d], chain, rest)
        enum += [k for k, _ in rest]
    cost = _estimate(sm.prod(src_shape)) * math.prod(_estimate(p.shape[k]) for k in enum)
    return _Plan(cost, sorted(enum), per_axis=per_axis)


def _plan(p: _Pending, src_shape: tuple) -> _Plan:
    lin, other = _linear_axes(p)
    flat = _plan_flat(p, lin, other, src_shape)
    per = _plan_per_axis(p, lin, other, src_shape)
    return per if per is not None and per.cost <= flat.cost else flat


def _solve(r: Expr, chain: list, shape: list, coords: dict) -> Expr:
    """Solve r == Σ stride_k · i_k for the chain axes (r already has the flipped axes' constant
    removed); sets coords and returns the validity of the solution."""
    ok = sm.ge(r, 0)
    for k, st in chain:
        a = _abs(st)
        q = r // a
        r = r % a
        ok = sm.logical_and(ok, sm.lt(q, shape[k]))
        coords[k] = q if st.vmin > 0 else shape[k] - 1 - q
    return sm.logical_and(ok, sm.eq(r, 0))


def _invert(p: _Pending, plan: _Plan, src_shape: tuple) -> Node:
    """Step 4: the source gradient as a view of p.node (plus a sum over enumerated axes)."""
    nsrc = len(src_shape)
    src_vars = [_var(d, s) for d, s in enumerate(src_shape)]
    coords: dict = {d: sm.ZERO for d, s in enumerate(p.shape) if s is sm.ONE}
    for t, k in enumerate(plan.enum):
        coords[k] = _var(nsrc + t, p.shape[k])

    def flipped(chain) -> Expr:  # what the chain contributes at its zero point
        return sm.sum_of(st * (p.shape[k] - 1) for k, st in chain if st.vmax < 0)

    if plan.chain is not None:
        j = sm.sum_of(v * st for v, st in zip(src_vars, row_major_strides(src_shape)))
        chain_zero = {index_name(k): 0 for k, _ in plan.chain}
        base = sm.substitute(p.index, {index_name(k): c for k, c in coords.items()} | chain_zero)
        ok = _solve(j - base - flipped(plan.chain), plan.chain, p.shape, coords)
    else:
        ok = sm.ONE
        for d in range(nsrc):
            if d not in plan.per_axis:
                continue
            off, chain, rest = plan.per_axis[d]
            r = src_vars[d] - off - sm.sum_of(coef * coords[k] for k, coef in rest) - flipped(chain)
            ok = sm.logical_and(ok, _solve(r, chain, p.shape, coords))
    ok = sm.logical_and(ok, sm.substitute(p.valid, {index_name(k): c for k, c in coords.items()}))
    out_shape = list(src_shape) + [p.shape[k] for k in plan.enum]
    node = _remap(p.node, out_shape, [coords[k] for k in range(len(p.shape))], ok)
    if plan.enum:
        node = g.reduce_node(g.SUM, node, range(nsrc, nsrc + len(plan.enum)))
        node = g.apply_view(node, lambda v: v.reshape(src_shape))
    return node
