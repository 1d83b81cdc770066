"""Softmax shifts: maxima whose gradient is zero by algebra, so autograd need not propagate it.

A softmax is written from primitives as

    m = max_A x,   E = exp2(c (x - m)),   P = E * recip(sum_A E)

and the max is there only to keep exp2 in range: for any value h constant along the reduced axes A,

    exp2(f + h) / sum_A exp2(f + h) = exp2(f) / sum_A exp2(f),

so P does not depend on m at all, and the gradient that reaches m (through E, and through the sum)
is exactly zero. Differentiated blindly it is not computed as zero: the max's rule sends
`g_m / count` to every position equal to the max, where g_m = -sum_A(dX) is a sum of products
that cancels only in real arithmetic (two row reductions and a comparison per element, and in
attention's backward a term that stops the scores from being recomputed tile by tile).

`softmax_shifts(order)` proves that structure for each MAX node and returns those that qualify;
`backward` then treats them as constants (torch defines softmax's gradient the same way). The proof
is structural and closed: every float reader of m, followed forward, must be

* a VIEW that broadcasts along A (its index does not use A's index variables: the value is the same
  at every point of a reduced row), a MUL by a constant, or an ADD (a sum of such terms and terms
  free of m: the exponent is f + h with h constant along A), up to an EXP2 node E;
* E read only by the SUM over exactly A and by the MUL that normalises it, E * recip(view(sum_A E))
  (the sum read only through broadcasting views into that recip, the recip only by that MUL).

Anything else (a max also used elsewhere, a log-sum-exp, a shift scaled by a non-constant) keeps
its gradient.
"""
from __future__ import annotations

from .. import graph as g
from .. import symbolic as sm
from ..graph import Node
from ..view import index_name


def softmax_shifts(order: list) -> set:
    """The MAX nodes of `order` (a toposort) whose every use is a softmax's shift (module docstring)."""
    readers: dict = {}
    for n in order:
        for s in set(n.srcs):
            readers.setdefault(s, []).append(n)
    out = set()
    for m in order:
        if m.op == g.MAX and m.dtype.is_float and _is_shift(m, readers):
            out.add(m)
    return out


def _float_readers(n: Node, readers: dict) -> list:
    return [r for r in readers.get(n, ()) if r.dtype.is_float]


def _broadcasts_along(v: Node, axes: set) -> bool:
    """v is a VIEW whose value does not vary along the output axes `axes`."""
    if v.op != g.VIEW or len(v.shape) <= max(axes, default=-1):
        return False
    used = sm.free_vars(v.arg.index) | sm.free_vars(v.arg.valid)
    return not any(index_name(d) in used for d in axes)


def _constant(n: Node) -> bool:
    while n.op == g.VIEW:
        n = n.srcs[0]
    return n.op == g.CONST


def _is_shift(m: Node, readers: dict) -> bool:
    """Every float path from m is linear in m with a part constant along A, up to normalised EXP2s."""
    axes = set(m.arg)
    chain = {m}
    exps: set = set()
    stack = [m]
    while stack:
        n = stack.pop()
        rs = _float_readers(n, readers)
        if not rs:  # an output, or a value read by nothing: it depends on m
            return False
        for r in rs:
            if r in chain or r in exps:
                continue
            if r.op == g.EXP2:
                exps.add(r)
                continue
            if r.op == g.VIEW:  # the same rank, constant along A (a broadcast of a reduced row's value)
                ok = len(r.shape) == len(m.shape) and _broadcasts_along(r, axes)
            elif r.op == g.MUL:  # times a constant
                ok = all(_constant(s) for s in r.srcs if s is not n)
            else:  # a sum of such terms (the shifted scores x - m)
                ok = r.op == g.ADD
            if not ok:
                return False
            chain.add(r)
            stack.append(r)
    return bool(exps) and all(_normalised(e, axes, readers) for e in exps)


def _normalised(e: Node, axes: set, readers: dict) -> bool:
    """E is read only by sum_A E and by E * recip(view(sum_A E)), the sum only through that recip."""
    rs = _float_readers(e, readers)
    sums = [r for r in rs if r.op == g.SUM]
    if len(sums) != 1 or set(sums[0].arg) != axes:
        return False
    z = sums[0]
    recips = []
    for v in _float_readers(z, readers):
        if not _broadcasts_along(v, axes) or v.shape != e.shape:
            return False
        for r in _float_readers(v, readers):
            if r.op != g.RECIP:
                return False
            recips.append(r)
    products = [r for r in rs if r is not z]
    if not recips or not products:
        return False
    for p in products:
        if p.op != g.MUL or not any(s in recips for s in p.srcs):
            return False
    return all(all(r in products for r in _float_readers(rc, readers)) for rc in recips)
