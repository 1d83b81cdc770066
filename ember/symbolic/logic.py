"""Comparisons and logic (booleans are the integers 0 and 1; ``and`` / ``not`` always give 0 or 1)
and min / max. Comparisons keep positive terms on the left and negated negative terms on the
right; conjunctions are flattened, deduplicated, sorted, and keep only the stronger of two bounds
on one expression."""
from __future__ import annotations

import math
from typing import Iterable

from . import bounds as bd
from .arith import _linear, _make_add, add, sub
from .expr import ONE, ZERO, Expr, IntLike, _new, _sorted, const, sym
from .rewrite import Pat, Rules, pmax, pmin, rewrite

x, y = Pat.var("x"), Pat.var("y")


def _min_node(x: Expr, y: Expr) -> Expr:
    p, q = _sorted((x, y))
    return _new("min", (p, q), min(x.vmin, y.vmin), min(x.vmax, y.vmax), f"min({p.key}, {q.key})")


def _max_node(x: Expr, y: Expr) -> Expr:
    p, q = _sorted((x, y))
    return _new("max", (p, q), max(x.vmin, y.vmin), max(x.vmax, y.vmax), f"max({p.key}, {q.key})")


MIN = Rules("min", [
    (pmin(x, x), lambda x: x),
    (pmin(x, y), lambda x, y: x if bd.prove_le(x, y) else None),
    (pmin(x, y), lambda x, y: y if bd.prove_le(y, x) else None),
    (pmin(x, y), _min_node),
])

MAX = Rules("max", [
    (pmax(x, x), lambda x: x),
    (pmax(x, y), lambda x, y: x if bd.prove_le(y, x) else None),
    (pmax(x, y), lambda x, y: y if bd.prove_le(x, y) else None),
    (pmax(x, y), _max_node),
])


def _certain(x: Expr) -> bool:
    """x is certainly non-zero (true)."""
    lo, hi = bd._range(x)
    return bool(lo > 0 or hi < 0)


def _zero(x: Expr) -> bool:
    lo, hi = bd._range(x)
    return bool(lo == hi == 0)


NOT = Rules("not", [
    (~x, lambda x: ZERO if _certain(x) else None),
    (~x, lambda x: ONE if _zero(x) else None),
    (~(x < y), lambda x, y: lt(y, add(x, 1))),  # !(x < y) == y < x + 1 over the integers
    (~~x, lambda x: x if _is_bool(x) else None),  # !!y == y when y is 0 or 1
    (~x, lambda x: _new("not", (x,), 0, 1, f"!{x.key}")),
])


def minimum(a: IntLike, b: IntLike) -> Expr:
    return rewrite(MIN, sym(a), sym(b))


def maximum(a: IntLike, b: IntLike) -> Expr:
    return rewrite(MAX, sym(a), sym(b))


def logical_not(a: IntLike) -> Expr:
    return rewrite(NOT, sym(a))


def lt(a: IntLike, b: IntLike) -> Expr:
    """a < b as 0/1. Canonical form: with a - b = c + P - Q (P, Q positive combinations, c constant),
    ``P < Q - c``; or ``c < Q`` when P is empty. Coefficients are divided by their gcd:
    g*X + c < 0  <=>  X + c // g < 0  over the integers."""
    a, b = sym(a), sym(b)
    d = sub(a, b)
    lo, hi = bd._range(d)
    if hi < 0:
        return ONE
    if lo >= 0:
        return ZERO
    c, terms = _linear(d)
    g = math.gcd(*terms.values())
    if g > 1:
        c, terms = c // g, {t: k // g for t, k in terms.items()}
    pos = {t: k for t, k in terms.items() if k > 0}
    neg = {t: -k for t, k in terms.items() if k < 0}
    if pos:
        x, y = _make_add(0, pos), _make_add(-c, neg)
    else:
        x, y = const(c), _make_add(0, neg)
    return _new("lt", (x, y), 0, 1, f"({x.key} < {y.key})")


def le(a: IntLike, b: IntLike) -> Expr:
    return lt(a, add(b, 1))


def ge(a: IntLike, b: IntLike) -> Expr:
    return lt(b, add(a, 1))


def gt(a: IntLike, b: IntLike) -> Expr:
    return lt(b, a)


def eq(a: IntLike, b: IntLike) -> Expr:
    return logical_and(le(a, b), ge(a, b))


def _is_bool(e: Expr) -> bool:
    return e.vmin >= 0 and e.vmax <= 1


def _truth(e: Expr) -> Expr:
    """e != 0 as 0/1."""
    return e if _is_bool(e) else logical_not(logical_not(e))


def _implies(p: Expr, q: Expr) -> bool:
    """p => q for two comparisons  x < y  sharing a side."""
    if p.op != "lt" or q.op != "lt":
        return False
    (px, py), (qx, qy) = p.args, q.args
    if px is qx:  # x < py and py <= qy  =>  x < qy
        return bd.prove_le(py, qy)
    if py is qy:  # qx <= px and px < y  =>  qx < y
        return bd.prove_le(qx, px)
    return False


def logical_and(a: IntLike, b: IntLike) -> Expr:
    parts: list = []
    stack = [sym(b), sym(a)]
    while stack:  # flatten nested conjunctions
        x = stack.pop()
        if x.op == "and":
            stack.extend(reversed(x.args))
            continue
        lo, hi = bd._range(x)
        if lo > 0 or hi < 0:  # certainly true
            continue
        if lo == hi == 0:  # certainly false
            return ZERO
        x = _truth(x)
        if x not in parts:
            parts.append(x)
    # drop a conjunct that another one implies (i < 3 && i < 4  ->  i < 3); of two equivalent ones
    # keep the first in canonical order
    parts = _sorted(parts)
    keep = [x for n, x in enumerate(parts)
            if not any(_implies(y, x) and not (m > n and _implies(x, y)) for m, y in enumerate(parts) if m != n)]
    if not keep:
        return ONE
    out = keep[0]
    for p in keep[1:]:
        out = _new("and", (out, p), 0, 1, f"({out.key} && {p.key})")
    return out


def all_of(xs: Iterable[IntLike]) -> Expr:
    out = ONE
    for x in xs:
        out = logical_and(out, x)
    return out


