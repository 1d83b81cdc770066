"""Index algebra for un-viewing: views over nodes addressed by coordinate expressions, the pending
sum that un-viewing rewrites (`_Pending`), and simplifications of index expressions over index
variables and named dimensions that the canonical simplifier (ember/symbolic) stops short of."""
from __future__ import annotations

from collections.abc import Sequence

from .. import graph as g
from .. import symbolic as sm
from ..graph import Node
from ..symbolic import Expr, sym
from ..view import View, index_name, row_major_strides

# ------------------------------------------------------------------------------------------------
# views over nodes

def _remap(node: Node, shape: Sequence, coords: Sequence[Expr], extra_valid: Expr = sm.ONE) -> Node:
    """A view of ``node`` with ``shape`` whose element at the new coordinates is ``node[coords]``
    (each coordinate an expression of the new index variables), or 0 where ``extra_valid`` is false.
    Composes with node's own view when node is a VIEW, so chains stay one view."""
    base, v = g.current_view(node)
    m = {index_name(d): c for d, c in enumerate(coords)}
    idx = sm.substitute(v.index, m)
    valid = sm.logical_and(sm.substitute(v.valid, m), extra_valid)
    return g.view_node(base, View(tuple(sym(s) for s in shape), idx, valid))


def _unflatten(flat: Expr, shape: Sequence[Expr]) -> list[Expr]:
    return [(flat // st) if d == 0 else (flat // st) % s
            for d, (s, st) in enumerate(zip(shape, row_major_strides(shape)))]


def _var(d: int, extent) -> Expr:
    return sm.index_var(index_name(d), extent)


def _index_names(e: Expr) -> set:
    return {v for v in sm.free_vars(e) if v.startswith("_i")}


def _estimate(e: Expr) -> float:
    """A number for an extent, for cost comparisons only (named dims count as 64)."""
    if e.is_const:
        return float(e.value)
    return float(sm.evaluate(e, {v: 64 for v in sm.free_vars(e)}))


class _Pending:
    """grad_source_flat[j] = sum over i in ``shape`` with valid(i) and index(i) == j of node[i]."""

    __slots__ = ("index", "node", "shape", "valid")

    def __init__(self, node: Node, shape: list, index: Expr, valid: Expr):
        self.node, self.shape, self.index, self.valid = node, list(shape), index, valid

    def names(self) -> tuple[set, set]:
        return _index_names(self.index), _index_names(self.valid)


def _factor_list(t: Expr) -> list:
    return list(t.args) if t.op == "mul" else [t]


def _exact_quotient(t: Expr, k: int, b: Expr) -> Expr | None:
    """(k·t) / b when a symbolic divisor b = kb·(product) divides it structurally, else None."""
    if b.op == "add" and b.args[0] == 0 and len(b.args[1]) == 1:
        (tb, kb), = b.args[1]
    else:
        tb, kb = b, 1
    if k % kb:
        return None
    rest = _factor_list(t)
    for f in _factor_list(tb):
        if f not in rest:
            return None
        rest.remove(f)
    return sm.prod(rest) * (k // kb)


def _index_coefficients(e: Expr) -> dict:
    """{index variable v: the coefficient expression of v} for the terms of e linear in v."""
    out: dict = {}
    for t, k in (e.args[1] if e.op == "add" else (() if e.is_const else ((e, 1),))):
        fs = _factor_list(t)
        idx = [f for f in fs if f.op == "var" and f.args[0].startswith("_i")]
        if len(idx) != 1:
            continue
        v = idx[0]
        rest = list(fs)
        rest.remove(v)
        out[v] = out.get(v, sm.ZERO) + sm.prod(rest) * k
    return out


def _const_multiple(coef: Expr, b: Expr, exact: bool = True) -> int | None:
    """m if coef == m·b for an integer m (both linear in named dimensions), else None. With
    exact=False, coef may also differ from m·b by a plain number."""
    b_terms = b.args[1] if b.op == "add" else ((b, 1),)
    c_terms = dict(coef.args[1]) if coef.op == "add" else ({} if coef.is_const else {coef: 1})
    t0, k0 = b_terms[0]
    if t0 not in c_terms or c_terms[t0] % k0:
        return None
    m = c_terms[t0] // k0
    left = coef - b * m
    return m if m and (left is sm.ZERO or (not exact and left.is_const)) else None


def _index_free(e: Expr) -> Expr:
    """The terms of e that contain no index variable."""
    if e.op != "add":
        return e if not _index_names(e) else sm.ZERO
    return sm.sum_of([e.args[0]] + [t * k for t, k in e.args[1] if not _index_names(t)])


def _bound(e: Expr, upper: bool) -> Expr | None:
    """A symbolic bound of a linear expression whose terms are products of non-negative factors:
    index variables are replaced by 0 or by their (possibly symbolic) largest value; named
    dimensions stay. None when a factor could be negative."""
    c0, terms = (e.args[0], e.args[1]) if e.op == "add" else ((e.value, ()) if e.is_const else (0, ((e, 1),)))
    out = sm.const(c0)
    for t, k in terms:
        factors = _factor_list(t)
        if any(f.vmin < 0 for f in factors):
            return None
        high = upper == (k > 0)
        val = sm.ONE
        for f in factors:
            if f.op == "var" and f.args[0].startswith("_i"):
                hi = f.args[2]
                if high and hi is None:
                    return None
                val = val * (sym(hi) if high else sm.ZERO)
            elif f.op in ("var", "const"):
                val = val * f
            else:
                return None
        out = out + val * k
    return out


def _within(a: Expr, b: Expr, atoms: Sequence[Expr] = ()) -> bool:
    """0 <= a < b for every value of the index variables (b symbolic) where every atom is >= 0."""
    lo, hi = _bound(a, False), _bound(a, True)
    lower = (lo is not None and sm.prove_le(0, lo)) or any(sm.prove_le(t, a) for t in atoms)
    upper = (hi is not None and sm.prove_lt(hi, b)) or any(sm.prove_le(t, b - 1 - a) for t in atoms)
    return lower and upper


def _split_multiples(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """(quot, rest) with a == quot·b + rest, quot holding the exact multiples of a symbolic divisor b."""
    quot, rest = sm.ZERO, a
    terms = dict(a.args[1]) if a.op == "add" else ({} if a.is_const else {a: 1})
    for t, k in terms.items():
        q = _exact_quotient(t, k, b)
        if q is not None:
            quot, rest = quot + q, rest - t * k
    for v, coef in _index_coefficients(rest).items():  # (S+1)·i spread over S·i + i
        m = _const_multiple(coef, b)
        if m is not None:
            quot, rest = quot + v * m, rest - v * coef
    m = _const_multiple(_index_free(rest), b, exact=False)  # (3S + 3 + r) // (3S + 3)
    if m is not None:
        quot, rest = quot + m, rest - b * m
    return quot, rest


def _nested_div(x: Expr):
    """(a, c, m) when x is (a // c) // m or (a // c) % m with c a constant > 1 and m symbolic (> 0)."""
    inner, m = x.args
    if inner.op != "div" or m.is_const or m.vmin <= 0:
        return None
    a, c = inner.args
    return (a, c.value, m) if c.is_const and c.value > 1 else None


def _resimplify(e: Expr, atoms: Sequence[Expr] = ()) -> Expr:
    """Rebuild e, splitting exact multiples out of floor divisions and modulos by *symbolic* divisors,
    (128·S·i + r) // (128·S) -> i + r // (128·S), and dropping them when the remainder is provably in
    [0, divisor) — from variable bounds that may be symbolic, or from ``atoms`` (expressions known
    to be >= 0, e.g. the validity's conjuncts: only sound where e matters only when those hold). The
    canonical simplifier does neither for scaled symbolic divisors, so reshapes over named dimensions
    would otherwise keep div/mod terms that hide their affine structure from the un-viewing analysis."""
    memo: dict = {}

    def go(x: Expr) -> Expr:
        r = memo.get(x)
        if r is not None:
            return r
        op = x.op
        if op in ("const", "var"):
            r = x
        elif op == "add":
            r = sm.const(x.args[0])
            for t, k in x.args[1]:
                r = r + go(t) * k
        elif op == "mul":
            r = sm.prod(go(f) for f in x.args)
        elif op in ("div", "mod") and _nested_div(x) is not None:
            # the simplifier writes x // (c·m) as (x // c) // m and x % (c·m) as c·((x // c) % m) + x % c;
            # both are read here as one division by the scaled divisor c·m, which the rules below handle
            a0, c, m = _nested_div(x)
            a, b = go(a0), sm.const(c) * go(m)
            quot, rest = _split_multiples(a, b)
            if _within(rest, b, atoms):
                r = quot if op == "div" else rest // c
            else:
                r = quot + rest // b if op == "div" else (rest % b) // c
        elif op in ("div", "mod"):
            a, b = go(x.args[0]), go(x.args[1])
            quot, rest = _split_multiples(a, b) if not b.is_const else (sm.ZERO, a)
            if not b.is_const and _within(rest, b, atoms):
                r = quot if op == "div" else rest
            else:
                r = quot + rest // b if op == "div" else rest % b
        elif op == "min":
            r = sm.minimum(go(x.args[0]), go(x.args[1]))
        elif op == "max":
            r = sm.maximum(go(x.args[0]), go(x.args[1]))
        elif op == "lt":
            r = sm.lt(go(x.args[0]), go(x.args[1]))
        elif op == "and":
            r = sm.logical_and(go(x.args[0]), go(x.args[1]))
        elif op == "not":
            r = sm.logical_not(go(x.args[0]))
        else:  # pragma: no cover
            r = x
        memo[x] = r
        return r

    return go(e)
