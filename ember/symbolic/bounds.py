"""Bounds and range analysis: pointwise symbolic bounds (`lower_bound` / `upper_bound`, in which index
variables are replaced by their possibly symbolic bounds while named dims stay themselves:
``S*H - 1 - (H*i + j) >= S*H - 1 - (H*(S-1) + H-1) = 0``) and the proofs built on them (`prove_le`,
`prove_lt`) that the div/mod folds use when numeric bounds are not enough."""
from __future__ import annotations

from typing import Optional

from . import arith as ar
from . import division as dv
from . import logic as lg
from .expr import INF, ZERO, Expr, IntLike, const, sym

_BOUND_DEPTH = [0]


def lower_bound(e: IntLike) -> Expr:
    """An expression L with L <= e for every assignment inside the declared bounds: index variables
    are replaced by their (possibly symbolic) bounds, named dims (unbounded variables) stay."""
    e = sym(e)
    if e._lb is None:
        e._lb = _bound(e, False)
    return e._lb


def upper_bound(e: IntLike) -> Expr:
    """An expression U with e <= U for every assignment inside the declared bounds (see lower_bound)."""
    e = sym(e)
    if e._ub is None:
        e._ub = _bound(e, True)
    return e._ub


def _numeric_or_self(e: Expr, upper: bool) -> Expr:
    v = e.vmax if upper else e.vmin
    return const(int(v)) if v not in (INF, -INF) else e


def _bound(e: Expr, upper: bool) -> Expr:
    op = e.op
    if op == "const":
        return e
    if _BOUND_DEPTH[0] > 12:  # deep recursion through bound expressions: fall back to e itself
        return _numeric_or_self(e, upper)
    _BOUND_DEPTH[0] += 1
    try:
        return _bound_rule(e, upper)
    finally:
        _BOUND_DEPTH[0] -= 1


def _bound_rule(e: Expr, upper: bool) -> Expr:
    rule = _BOUND_RULES.get(e.op)
    r = rule(e, upper) if rule is not None else None
    return r if r is not None else _numeric_or_self(e, upper)  # lt / and / not: 0 or 1


def _side(upper: bool) -> tuple:
    """(the same-side bound, the other side's bound)."""
    return (upper_bound, lower_bound) if upper else (lower_bound, upper_bound)


def _var_bound(e: Expr, upper: bool) -> Expr:
    name, lo, hi = e.args
    if hi is None:  # a named dim (or an unbounded variable): it bounds itself
        return e
    return sym(hi) if upper else const(lo)


def _add_bound(e: Expr, upper: bool) -> Expr:  # monotone in each term: a positive coefficient takes the same side
    bnd, other = _side(upper)
    c, terms = e.args
    return ar.sum_of([c] + [k * (bnd(t) if k > 0 else other(t)) for t, k in terms])


def _mul_bound(e: Expr, upper: bool) -> Optional[Expr]:
    fs = e.args
    if not all(f.vmin >= 0 for f in fs):
        return None
    # 0 <= f <= U(f) for each factor, so the product is at most the product of the bounds;
    # lower: a factor's lower bound is used only when it is itself non-negative.
    if upper:
        return ar.prod(upper_bound(f) for f in fs)
    ls = [lower_bound(f) for f in fs]
    return ar.prod(x if x.vmin >= 0 else const(int(f.vmin)) for x, f in zip(ls, fs))


def _min_bound(e: Expr, upper: bool) -> Expr:
    a, b = e.args
    if upper:  # min(a, b) <= a and <= b: take the tighter one
        ua, ub = upper_bound(a), upper_bound(b)
        return ua if ua.vmax <= ub.vmax else ub
    return lg.minimum(lower_bound(a), lower_bound(b))


def _max_bound(e: Expr, upper: bool) -> Expr:
    a, b = e.args
    if upper:
        return lg.maximum(upper_bound(a), upper_bound(b))
    la, lb = lower_bound(a), lower_bound(b)
    return la if la.vmin >= lb.vmin else lb


# the symbolic bound of each node kind from its arguments' bounds; None: fall back to the numeric
# bound (or the node itself where that is infinite)
_BOUND_RULES: dict = {
    "var": _var_bound,
    "add": _add_bound,
    "mul": _mul_bound,
    # floor(x / b) is monotone in x for fixed b > 0
    "div": lambda e, upper: dv.floordiv(_side(upper)[0](e.args[0]), e.args[1]) if e.args[1].vmin >= 1 else None,
    # 0 <= x % b <= b - 1 for b > 0
    "mod": lambda e, upper: (ar.sub(e.args[1], 1) if upper else ZERO) if e.args[1].vmin >= 1 else None,
    "min": _min_bound,
    "max": _max_bound,
}


def _range(e: Expr) -> tuple:
    """Numeric bounds of e, tightened by its symbolic bounds where the numeric ones are infinite."""
    lo, hi = e.vmin, e.vmax
    if lo == -INF:
        lo = lower_bound(e).vmin
    if hi == INF:
        hi = upper_bound(e).vmax
    return lo, hi


def prove_le(a: IntLike, b: IntLike) -> bool:
    """True only if a <= b is certain for every value of the variables."""
    return _range(ar.sub(b, a))[0] >= 0


def prove_lt(a: IntLike, b: IntLike) -> bool:
    return _range(ar.sub(b, a))[0] >= 1


