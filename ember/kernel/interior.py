"""A window's interior: where none of its guards can fail.

A padded pool or conv guards each tap's load (`x[o + 3r - 4] if 3 < o + 3r < L + 4`) and selects the
padding value where the guard fails (`where(idx(guard), load, -inf)`). For most outputs every tap is
inside: real KernelBench 41's 8-tap dilated max pool spends its time on those comparisons and selects
(the kernel's SMs are busy, its HBM a fifth used). `interior_form` gives a condition on the outer
variables under which every guard holds at every tap, and the canon with every guard replaced by true;
a renderer runs the plain canon only where the condition fails (codegen knob `interior`).

The condition is exact, not a guess: each guard must be a conjunction of comparisons `x < y` with
`y - x` linear in the reduction variables (and in any `ranges` the caller adds: a strip's output
offset). Such a difference is smallest at one end of each variable's range, by the sign of its
coefficient, so the comparison at that end holds exactly when it holds at every tap. A guard of any
other form (a division of a reduction variable: a strided transposed conv's phases) refuses.
"""
from __future__ import annotations

import dataclasses

from .. import symbolic as sm
from ..symbolic.arith import _linear
from ..symbolic.assume import conjuncts
from . import ir
from .structure import Canon


def interior_form(c: Canon, ranges: dict | None = None, subst: dict | None = None) -> tuple | None:
    """(condition, canon with its guards true) or None where c has no guard or one not in the form
    above. `ranges`: {name: (lo, hi)} of further variables to hold the condition over; `subst`: a
    substitution applied to the guards first (a strip's variable as V * block + offset)."""
    ranges = dict(ranges or {})
    for s in c.stages:
        for v, e in s.loops:
            e = sm.sym(e)
            if not e.is_const:
                return None
            ranges[v] = (0, e.value - 1)
    guards = _guards([s.update.value for s in c.stages] + [c.store.value])
    if not guards:
        return None
    atoms = {}
    for g in guards:
        g = sm.substitute(g, subst) if subst else g
        for a in conjuncts(g):
            if a.is_const and a.value:
                continue
            if a.op != "lt":
                return None
            worst = _worst(a, ranges)
            if worst is None:
                return None
            atoms[worst] = True
    cond = sm.all_of(atoms)
    memo: dict = {}
    stages = [dataclasses.replace(s, update=ir.Update(s.update.name, s.update.op, _assume(s.update.value, memo)))
              for s in c.stages]
    store = ir.Store(c.store.buffer, c.store.index, _assume(c.store.value, memo))
    return cond, dataclasses.replace(c, stages=stages, store=store)


def _guards(vals: list) -> list:
    """The distinct guard expressions of vals: loads' `valid` and boolean index values."""
    out = {}
    for v in ir.val_toposort(vals):
        if v.op == "load" and v.args[2] is not sm.ONE:
            out[v.args[2]] = True
        elif v.op == "index" and v.dtype.is_bool:
            out[v.args[0]] = True
    return list(out)


def _worst(atom, ranges: dict):
    """`x < y` at the end of each ranged variable where y - x is least, or None where y - x is not
    linear in them."""
    x, y = atom.args
    d = sm.sym(y) - sm.sym(x)
    _, terms = _linear(d)
    at = {}
    for t, coef in terms.items():
        inside = sm.free_vars(t) & set(ranges)
        if not inside:
            continue
        if t.op != "var" or not isinstance(coef, int):
            return None  # a ranged variable inside a product, division or modulus
        lo, hi = ranges[t.args[0]]
        at[t.args[0]] = lo if coef > 0 else hi
    return sm.lt(sm.substitute(x, at), sm.substitute(y, at)) if at else atom


def _assume(v: ir.Val, memo: dict) -> ir.Val:
    """v with every load unguarded and every boolean index value true."""
    r = memo.get(v)
    if r is not None:
        return r
    if v.op == "load":
        b, idx, _ = v.args
        r = ir.Val("load", (b, _assume(idx, memo) if isinstance(idx, ir.Val) else idx, sm.ONE), v.dtype)
    elif v.op == "index" and v.dtype.is_bool:
        r = ir.const(True, v.dtype)
    elif v.srcs:
        r = ir.Val(v.op, tuple(_assume(a, memo) if isinstance(a, ir.Val) else a for a in v.args), v.dtype)
    else:
        r = v
    memo[v] = r
    return r
