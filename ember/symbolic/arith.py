"""Canonical arithmetic: linear combinations (one flat ``add`` node: a constant plus sorted
``(term, coef)`` pairs, so like terms combine and cancel), products expanded over sums with sorted
factors, and the floor identity ``(x // m) * m + x % m == x`` recombining inside sums."""
from __future__ import annotations

import functools
from typing import Iterable, Optional

from .expr import _INTERN, ONE, ZERO, Expr, IntLike, _mul_bounds, _new, _sorted, const, sym


def _linear(e: Expr) -> tuple[int, dict]:
    if e.op == "const":
        return e.args[0], {}
    if e.op == "add":
        return e.args[0], dict(e.args[1])
    return 0, {e: 1}


def _factors(t: Expr) -> list:
    return list(t.args) if t.op == "mul" else [t]


def _make_mul(factors: list) -> Expr:
    """The product term of non-constant, non-sum factors."""
    if len(factors) == 1:
        return factors[0]
    fs = tuple(_sorted(factors))
    e = _INTERN.get(("mul", fs))
    if e is not None:
        return e
    lo, hi = 1, 1
    for f in fs:
        lo, hi = _mul_bounds((lo, hi), (f.vmin, f.vmax))
    return _new("mul", fs, lo, hi, "*".join(f.key for f in fs))


def _term_mul(t: Expr, u: Expr) -> Expr:
    """Product of two terms (either may be ONE)."""
    if t is ONE:
        return u
    if u is ONE:
        return t
    return _make_mul(_factors(t) + _factors(u))


def _make_add(c: int, terms: dict) -> Expr:
    """The canonical form of c + sum(k * t for t, k in terms)."""
    flat: dict = {}
    for t, k in terms.items():
        if k == 0:
            continue
        if t.op == "const":  # a constant that arrived as a term (e.g. an exact quotient of 1)
            c += k * t.args[0]
        elif t.op == "add":  # a sum that arrived as a term: distribute its coefficient
            c += k * t.args[0]
            for u, v in t.args[1]:
                flat[u] = flat.get(u, 0) + k * v
        else:
            flat[t] = flat.get(t, 0) + k
    terms = {t: k for t, k in flat.items() if k != 0}
    if terms and any(f.op == "div" for t in terms for f in _factors(t)):
        c, terms = _recombine(c, terms)
    if not terms:
        return const(c)
    if c == 0 and len(terms) == 1:
        (t, k), = terms.items()
        if k == 1:
            return t
    items = tuple((t, terms[t]) for t in _sorted(terms))
    e = _INTERN.get(("add", (c, items)))
    if e is not None:
        return e
    lo = hi = c
    key = ""
    for t, k in items:
        tlo, thi = _mul_bounds((t.vmin, t.vmax), (k, k))
        lo, hi = lo + tlo, hi + thi
        mag = t.key if abs(k) == 1 else f"{abs(k)}*{t.key}"
        key += (" - " if k < 0 else " + ") + mag if key else ("-" if k < 0 else "") + mag
    if c:
        key += f" - {-c}" if c < 0 else f" + {c}"
    return _new("add", (c, items), lo, hi, "(" + key + ")")


def _divides(b: Expr, t: Expr) -> Optional[Expr]:
    """t / b if b's factors are a sub-multiset of t's factors (ONE when t is b), else None."""
    tf = _factors(t)
    for f in _factors(b):
        if f in tf:
            tf.remove(f)
        else:
            return None
    return _make_mul(tf) if tf else ONE


def _recombine(c: int, terms: dict) -> tuple[int, dict]:
    """Apply the floor identity  x == (x // m) * m + x % m  (valid for every m != 0) to a sum, also
    when every term carries a common cofactor F (a symbolic stride):

    R1:  k*(x % m)*F + k*(x // m)*m*F  ->  k*x*F
    R2:  k*(x // m)*m*F - k*x*F        ->  -k*(x % m)*F

    Terms are visited in canonical order so the result depends only on the set of terms."""
    for _ in range(64):  # every rewrite removes a div term; the cap only guards against surprises
        hit = _recombine_once(c, terms)
        if hit is None:
            break
        c, terms = hit
    return c, terms


def _replace(c: int, terms: dict, remove: Iterable, k: int, e: Expr) -> tuple[int, dict]:
    """c + terms, without the terms in `remove`, plus k*e."""
    gone = set(remove)
    new = {u: v for u, v in terms.items() if u not in gone}
    ec, et = _linear(e)
    for u, v in et.items():
        new[u] = new.get(u, 0) + k * v
    return c + k * ec, {u: v for u, v in new.items() if v}


def _lin_prod(*xs: Expr) -> tuple[int, dict]:
    """The linear form (constant, terms) of a product, expanded without re-canonicalising: the
    recombination rules need the shape of (x // m) * m * F while building a sum, and building it
    through `mul` would recurse into the same rules."""
    c = 1
    terms: dict = {}
    for x in xs:
        xc, xt = _linear(x)
        nt: dict = {}
        for t, k in terms.items():
            if xc:
                nt[t] = nt.get(t, 0) + k * xc
            for u, v in xt.items():
                p = _term_mul(t, u)
                nt[p] = nt.get(p, 0) + k * v
        for u, v in xt.items():
            if c:
                nt[u] = nt.get(u, 0) + c * v
        c, terms = c * xc, {t: k for t, k in nt.items() if k}
    return c, terms


def _recombine_once(c: int, terms: dict):
    order = _sorted(terms)
    for t in order:  # R1
        k = terms[t]
        for f in _sorted(set(_factors(t))):
            if f.op != "mod":
                continue
            x, m = f.args
            cof = _divides(f, t)
            if cof is None:  # pragma: no cover -- f is a factor of t
                continue
            qc, qm = _lin_prod(dv.floordiv(x, m), m, cof)
            if qm and all(terms.get(u) == k * v for u, v in qm.items()):
                return _replace(c - k * qc, terms, [t, *qm], k, mul(x, cof))
    for t in order:  # R2
        for d in _sorted(set(_factors(t))):
            if d.op != "div":
                continue
            x, m = d.args
            cof = next((q for q in (_divides(u, t) for u in _sorted(_lin_prod(d, m)[1])) if q is not None), None)
            if cof is None:
                continue
            qc, qm = _lin_prod(d, m, cof)
            u0, v0 = next(iter(qm.items()))
            k, r = divmod(terms.get(u0, 0), v0)
            if r or not k:
                continue
            xc, xt = _lin_prod(x, cof)
            if xt and all(terms.get(u) == k * v for u, v in qm.items()) and \
                    all(terms.get(u) == -k * v for u, v in xt.items()):
                return _replace(c - k * qc + k * xc, terms, [*qm, *xt], -k, mul(dv.mod(x, m), cof))
    return None


def add(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if a.is_const and b.is_const:
        return const(a.value + b.value)
    if b is ZERO:
        return a
    if a is ZERO:
        return b
    ca, ta = _linear(a)
    cb, tb = _linear(b)
    for t, k in tb.items():
        ta[t] = ta.get(t, 0) + k
    return _make_add(ca + cb, ta)


def mul(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if a.is_const and b.is_const:
        return const(a.value * b.value)
    if b is ONE:
        return a
    if a is ONE:
        return b
    ca, ta = _linear(a)
    cb, tb = _linear(b)
    terms: dict = {}

    def acc(t: Expr, k: int) -> None:
        terms[t] = terms.get(t, 0) + k

    for t, k in ta.items():
        acc(t, k * cb)
    for t, k in tb.items():
        acc(t, k * ca)
    for t1, k1 in ta.items():
        for t2, k2 in tb.items():
            acc(_make_mul(_factors(t1) + _factors(t2)), k1 * k2)
    return _make_add(ca * cb, terms)


def sub(a: IntLike, b: IntLike) -> Expr:
    return add(a, mul(b, -1))


def sum_of(xs: Iterable[IntLike]) -> Expr:
    c = 0
    terms: dict = {}
    for x in xs:
        xc, xt = _linear(sym(x))
        c += xc
        for t, k in xt.items():
            terms[t] = terms.get(t, 0) + k
    return _make_add(c, terms)


def prod(xs: Iterable[IntLike]) -> Expr:
    return _prod(tuple(sym(x) for x in xs))


@functools.lru_cache(maxsize=1 << 14)
def _prod(xs: tuple) -> Expr:  # memoized: numel and strides of the same shapes are asked for constantly
    out = ONE
    for x in xs:
        out = mul(out, x)
    return out


# floor division and modulo build on the sums above (imported last: they import this module)
from . import division as dv  # noqa: E402
