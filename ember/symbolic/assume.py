"""Simplifying an expression where a condition is known to hold.

A load guarded by ``0 < y && y < 113`` reads an index that only matters when the guard holds; with
``y`` known to lie in [1, 112] there, divisions that straddle a bucket over y's whole range may fall
inside one (a padded view of a reshaped buffer: ``(112*y + x + 12431) // 12544`` is 1 for every
guarded point). `assume` tightens the bounds of the variables the condition bounds directly (atoms
``c < v`` and ``v < c``), simplifies under them, and gives the variables back their own bounds: the
result equals `e` wherever `cond` holds, and is only ever used there.
"""
from __future__ import annotations

from .expr import Expr, var
from .walk import substitute


def conjuncts(cond: Expr) -> list:
    """The atoms of a conjunction (the condition itself when it is not one)."""
    if cond.op != "and":
        return [cond]
    return [x for a in cond.args if isinstance(a, Expr) for x in conjuncts(a)]


def _vars(e: Expr, out: dict) -> dict:
    if e.op == "var":
        out.setdefault(e.args[0], e)
        return out
    for a in e.args:
        if isinstance(a, Expr):
            _vars(a, out)
        elif isinstance(a, tuple):  # an add node's (term, coefficient) pairs
            for t in a:
                if isinstance(t, tuple) and t and isinstance(t[0], Expr):
                    _vars(t[0], out)
    return out


def var_bounds(cond: Expr) -> dict:
    """{name: (lo, hi)} that `cond` imposes directly on single variables (None: unbounded side)."""
    out: dict = {}
    for a in conjuncts(cond):
        if a.op != "lt":
            continue
        x, y = a.args
        if x.is_const and y.op == "var":  # c < v
            lo, hi = out.get(y.args[0], (None, None))
            out[y.args[0]] = (x.value + 1 if lo is None else max(lo, x.value + 1), hi)
        elif x.op == "var" and y.is_const:  # v < c
            lo, hi = out.get(x.args[0], (None, None))
            out[x.args[0]] = (lo, y.value - 1 if hi is None else min(hi, y.value - 1))
    return out


def assume(e: Expr, cond: Expr) -> Expr:
    """`e` simplified where `cond` holds (its value elsewhere is unspecified)."""
    bounds = var_bounds(cond)
    if not bounds:
        return e
    present = _vars(e, {})
    tight, back = {}, {}
    for name, (lo, hi) in bounds.items():
        v = present.get(name)
        if v is None or not isinstance(v.args[2], (int, type(None))):  # symbolic upper bounds: leave alone
            continue
        vlo, vhi = v.args[1], v.args[2]
        nlo = vlo if lo is None else max(vlo, lo)
        nhi = vhi if hi is None else (hi if vhi is None else min(vhi, hi))
        if (nlo, nhi) == (vlo, vhi) or (nhi is not None and nhi < nlo):
            continue
        tight[name] = var(name, nlo, nhi)
        back[name] = v
    if not tight:
        return e
    return substitute(substitute(e, tight), back)
