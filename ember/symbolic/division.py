"""Floor division and modulo: the div/mod folding rules, as rule tables for the rewrite driver.

``floordiv`` / ``mod`` split off the part of the numerator that the divisor divides exactly and fold
the rest when bounds prove it stays inside one quotient bucket (``(i*8 + j) // 8 -> i`` when
``0 <= j < 8``), also for symbolic divisors (``(i*S + j) // S -> i`` when ``j`` is an index over
``S``, and ``(i*(S+2) + j) // (S+2) -> i``); a divisor's factor that the numerator's small part
cannot reach is peeled off (``(2*i + j) // 4 -> i // 2`` when ``0 <= j < 2``). Division and modulo
are *floor* division and *floor* modulo, as in Python.

Each operator has an entry table (zero, constant and negative divisors, taking out exact multiples)
and a table for what is left, the remainder ``r`` of ``a == q*b + r``: the rows of those tables are
the folds, in the order they are tried.
"""
from __future__ import annotations

import math
from typing import Optional

from . import bounds as bd
from .arith import _divides, _factors, _linear, _make_add, _term_mul, add, mul, sub
from .expr import INF, ONE, ZERO, Expr, IntLike, _div_bounds, _new, _sorted, const, sym
from .rewrite import Pat, Rules, rewrite


def _trunc_div(k: int, d: int) -> int:
    """k / d rounded toward zero (d > 0): the part of a coefficient k that d divides, keeping the
    remainder k - q*d of k's sign and smaller than d in magnitude."""
    return k // d if k >= 0 else -((-k) // d)


def _divisors(d: int) -> list:
    """Divisors of d strictly between 1 and d, largest first."""
    out: set = set()
    for g in range(2, math.isqrt(d) + 1):
        if d % g == 0:
            out.update((g, d // g))
    return sorted(out, reverse=True)


def _nested_split(c: int, terms: dict, d: int):
    """Find g | d and a split  r = g*y + s  with s inside one bucket [g*q0, g*q0 + g).

    Then (writing d = g*e)  r // d == (y + q0) // e  and  r % d == g*((y + q0) % e) + (s - g*q0):
    with r = g*Y + s', 0 <= s' < g, we have r = g*e*(Y//e) + g*(Y%e) + s' and 0 <= g*(Y%e) + s' < g*e.
    Returns (g, y + q0, s - g*q0) or None."""
    for g in _divisors(d):
        big = {t: k // g for t, k in terms.items() if k % g == 0}
        if not big:
            continue
        small = _make_add(c, {t: k for t, k in terms.items() if k % g != 0})
        lo, hi = bd._range(small)
        if lo == -INF or hi == INF:
            continue
        q0 = int(lo) // g
        if int(hi) // g == q0:
            return g, _make_add(q0, big), add(small, -g * q0)
    return None


def _poly_divide(c: int, terms: dict, b: Expr):
    """Write a = c + terms as q*b + rem by repeatedly removing multiples of b's leading term.

    Returns (q, rem) as expressions, or None when nothing divides. Valid for any b: it is just
    a = q*b + (a - q*b)."""
    bc, bt = _linear(b)
    if not bt:
        return None
    # a graded order (more factors first), as in multivariate polynomial division: each step removes
    # a multiple of b's highest term and adds only lower ones, so the degree never grows
    def order(ts):
        return sorted(_sorted(ts), key=lambda t: -len(_factors(t)))

    lead = order(bt)[0]
    lk = bt[lead]
    q: dict = {}
    rc, rem = c, dict(terms)
    for _ in range(4 * len(terms) + 8):
        hit = None
        for t in order(rem):
            m = _divides(lead, t)
            if m is not None and rem[t] % lk == 0:
                hit = t, m, rem[t] // lk
                break
        if hit is None:
            break
        t, m, f = hit
        q[m] = q.get(m, 0) + f
        for u, v in bt.items():
            p = _term_mul(m, u)
            rem[p] = rem.get(p, 0) - f * v
        if m is ONE:
            rc -= f * bc
        else:
            rem[m] = rem.get(m, 0) - f * bc
        rem = {u: v for u, v in rem.items() if v}
    if not q:
        return None
    return _make_add(0, q), _make_add(rc, rem)


def _split_symbolic(a: Expr, b: Expr) -> tuple:
    """(quotient part, remainder) with a == quotient*b + remainder, the remainder no longer than a."""
    c, terms = _linear(a)
    pd = _poly_divide(c, terms, b)
    if pd is not None:
        q, rem = pd
        # a sum divisor can leave a longer remainder than it removed ((S*i) // (S+2)); keep a then
        if len(_linear(rem)[1]) < len(terms):
            return q, rem
    return ZERO, a


def _nested_symbolic(a: Expr, b: Expr):
    """The symbolic form of `_nested_split`: for b = g*m with g a factor of b's single term, and
    a = g*y + s with 0 <= s < g, return (g, m, y, s); then a // b == y // m and
    a % b == g*(y % m) + s (same proof as for constants, g > 0)."""
    bc, bt = _linear(b)
    if bc or len(bt) != 1:
        return None
    (u, kb), = bt.items()
    cands = [f for f in _sorted(set(_factors(u))) if f.vmin >= 1]
    if kb > 1 and u.vmin >= 1:
        cands.append(u)
    c, terms = _linear(a)
    for g in cands:
        big: dict = {}
        small: dict = {}
        for t, k in terms.items():
            q = _divides(g, t)
            if q is not None:
                big[q] = big.get(q, 0) + k
            else:
                small[t] = k
        if not big:
            continue
        s = _make_add(c, small)
        if bd.prove_le(0, s) and bd.prove_lt(s, g):
            return g, floordiv(b, g), _make_add(0, big), s
    return None


def _negated(c: int, terms: dict):
    """For r = c - x with every coefficient of r negative: x - c - 1 (positive coefficients), else None.

    Numerators are oriented so that their terms are positive, using  floor((-y-1)/b) == -floor(y/b) - 1
    and  (-y-1) % b == b - 1 - y % b  for b > 0, with y = x - c - 1. A flipped coordinate (n - 1 - i)
    then divides and reduces like i does, and recombines with it."""
    if terms and all(k < 0 for k in terms.values()):
        return _make_add(-c - 1, {t: -k for t, k in terms.items()})
    return None


def _is_multiple(m: Expr, b: Expr) -> bool:
    """m == q*b for an integer expression q (structurally)."""
    if b.is_const:
        c, terms = _linear(m)
        return c % b.value == 0 and all(k % b.value == 0 for k in terms.values())
    return m is b or _split_symbolic(m, b)[1] is ZERO


# ------------------------------------------------------------------------------------------------
# the rule tables

x, b, e, m = (Pat.var(n) for n in ("x", "b", "e", "m"))
c, d = Pat.cvar("c"), Pat.cvar("d")  # constants, bound as their int values


def _zero_divisor(x: Expr) -> Expr:
    raise ZeroDivisionError(f"symbolic floor division of {x} by zero")


def _zero_modulus(x: Expr) -> Expr:
    raise ZeroDivisionError(f"symbolic modulo of {x} by zero")


def _bucket(x: Expr, d: int) -> Optional[int]:
    """q0 when x stays inside one bucket [q0*d, q0*d + d), else None."""
    lo, hi = bd._range(x)
    if lo != -INF and hi != INF and int(lo) // d == int(hi) // d:
        return int(lo) // d
    return None


def _below(x: Expr, d: int) -> bool:
    lo, hi = bd._range(x)
    return bool(lo >= 0 and hi < d)


def _div_bucket(x: Expr, d: int) -> Optional[Expr]:
    q0 = _bucket(x, d)
    return const(q0) if q0 is not None else None


def _in_0_b(x: Expr, b: Expr) -> bool:
    return bd.prove_le(0, x) and bd.prove_lt(x, b)


def _in_minus_b_0(x: Expr, b: Expr) -> bool:
    return bd.prove_le(mul(b, -1), x) and bd.prove_lt(x, 0)


def _gcd_of(x: Expr, d: int) -> tuple[int, Expr]:
    """(g, x / g) for the gcd g of d and x's constant and coefficients."""
    k, terms = _linear(x)
    g = math.gcd(d, k, *terms.values())
    return g, (x if g == 1 else _make_add(k // g, {t: v // g for t, v in terms.items()}))


def _div_take_multiples(x: Expr, d: int) -> Expr:
    """(q*d + r) // d == q + r // d for integer q: take out the constant's floor quotient and each
    coefficient's truncated quotient; what is left goes to the remainder rules."""
    k, terms = _linear(x)
    qc, rc = divmod(k, d)
    quot, rest = {}, {}
    for t, v in terms.items():
        q = _trunc_div(v, d)
        if q:
            quot[t] = q
        if v - q * d:
            rest[t] = v - q * d
    return add(_make_add(qc, quot), rewrite(DIV_CONST_REST, _make_add(rc, rest), const(d)))


def _div_node(x: Expr, b: Expr) -> Expr:
    if b.vmin >= 1:
        lo, hi = _div_bounds(x.vmin, x.vmax, b.vmin, b.vmax)
    else:
        lo, hi = -INF, INF
    bk = f"({b.key})" if b.op == "mul" else b.key
    return _new("div", (x, b), lo, hi, f"({x.key} // {bk})")


def _div_split(x: Expr, b: Expr) -> Expr:
    """x == q*b + r (polynomial division by b), then q + r // b by the remainder rules."""
    q, r = _split_symbolic(x, b)
    return add(q, rewrite(DIV_REST, r, b))


def _div_gcd(x: Expr, d: int) -> Optional[Expr]:
    g, y = _gcd_of(x, d)
    return rewrite(DIV_CONST_REST, y, const(d // g)) if g > 1 else None


def _div_nested(x: Expr, d: int) -> Optional[Expr]:
    ns = _nested_split(*_linear(x), d)
    return floordiv(ns[1], d // ns[0]) if ns is not None else None


def _div_nested_symbolic(x: Expr, b: Expr) -> Optional[Expr]:
    ns = _nested_symbolic(x, b)
    return floordiv(ns[2], ns[1]) if ns is not None else None


def _div_negated(x: Expr, b: Expr) -> Optional[Expr]:
    y = _negated(*_linear(x)) if b.vmin >= 1 else None
    return sub(-1, floordiv(y, b)) if y is not None else None


# a // b, as the constructor receives it
DIV = Rules("div", [
    (x // 0, _zero_divisor),
    (c // d, lambda c, d: const(c // d)),
    (x // d, lambda x, d: floordiv(mul(x, -1), -d) if d < 0 else None),  # floor(a / -d) == floor(-a / d)
    (x // 1, lambda x: x),
    (x // d, _div_take_multiples),  # (q*d + r) // d == q + r // d
    (x // x, lambda x: ONE),
    (x // b, _div_split),  # (q*b + r) // b == q + r // b
])

# r // d for a constant d > 1 and r with every coefficient smaller than d in magnitude
DIV_CONST_REST = Rules("div-const-rest", [
    (c // d, lambda c, d: const(c // d)),
    (x // 1, lambda x: x),
    (x // d, _div_gcd),  # (g*y) // (g*e) == y // e
    (x // d, _div_bucket),  # r in one bucket [q0*d, q0*d + d): q0
    ((x // e) // d, lambda x, e, d: floordiv(x, mul(e, d)) if e.vmin >= 1 else None),  # x // (e*d), e, d > 0
    (x // d, lambda x, d: _div_negated(x, const(d))),  # (c - x) // d == -((x - c - 1) // d) - 1
    (x // d, _div_nested),  # (g*y + s) // (g*e) == (y + q0) // e, s in one bucket of g
    (x // b, _div_node),
])

# r // b for a symbolic b, r the remainder of a polynomial division by b
DIV_REST = Rules("div-rest", [
    (x // b, lambda x, b: ZERO if _in_0_b(x, b) else None),  # r in [0, b)
    (x // b, lambda x, b: const(-1) if _in_minus_b_0(x, b) else None),  # r in [-b, 0)
    ((x // e) // b, lambda x, e, b: floordiv(x, mul(e, b)) if e.vmin >= 1 and b.vmin >= 1 else None),
    (x // b, _div_negated),  # (c - x) // b == -((x - c - 1) // b) - 1 for b > 0
    (x // b, _div_nested_symbolic),  # (g*y + s) // (g*m) == y // m, 0 <= s < g
    (x // b, _div_node),
])


def floordiv(a: IntLike, b: IntLike) -> Expr:
    return rewrite(DIV, sym(a), sym(b))


def _mod_drop_multiples(x: Expr, d: int) -> Expr:
    """(q*d + r) % d == r % d: drop the constant's and each coefficient's multiple of d."""
    k, terms = _linear(x)
    rest = {t: v - _trunc_div(v, d) * d for t, v in terms.items() if v % d != 0}
    return rewrite(MOD_CONST_REST, _make_add(k % d, rest), const(d))


def _mod_node(x: Expr, b: Expr) -> Expr:
    lo: float
    hi: float
    if b.is_const:
        hi = b.value - 1 if x.vmin < 0 else min(b.value - 1, x.vmax)
        return _new("mod", (x, b), 0, hi, f"({x.key} % {b.value})")
    if b.vmin >= 1:
        lo, hi = 0, b.vmax - 1
        if x.vmin >= 0:  # x % b <= x for x >= 0
            hi = min(hi, x.vmax)
    elif b.vmax <= -1:
        lo, hi = b.vmin + 1, 0
        if x.vmax <= 0:
            lo = max(lo, x.vmin)
    else:
        lo, hi = -INF, INF
    bk = f"({b.key})" if b.op == "mul" else b.key
    return _new("mod", (x, b), lo, hi, f"({x.key} % {bk})")


def _mod_split(x: Expr, b: Expr) -> Expr:
    return rewrite(MOD_REST, _split_symbolic(x, b)[1], b)


def _mod_gcd(x: Expr, d: int) -> Optional[Expr]:
    g, y = _gcd_of(x, d)
    return mul(mod(y, d // g), g) if g > 1 else None


def _mod_bucket(x: Expr, d: int) -> Optional[Expr]:
    q0 = _bucket(x, d)
    return sub(x, q0 * d) if q0 is not None else None


def _mod_negated(x: Expr, b: Expr) -> Optional[Expr]:
    y = _negated(*_linear(x)) if b.vmin >= 1 else None
    return sub(sub(b, 1), mod(y, b)) if y is not None else None


def _mod_nested(x: Expr, d: int) -> Optional[Expr]:
    ns = _nested_split(*_linear(x), d)
    if ns is None:
        return None
    g, y, s = ns
    return add(mul(mod(y, d // g), g), s)


def _mod_nested_symbolic(x: Expr, b: Expr) -> Optional[Expr]:
    ns = _nested_symbolic(x, b)
    if ns is None:
        return None
    g, m, y, s = ns
    return add(mul(mod(y, m), g), s)


# a % b, as the constructor receives it
MOD = Rules("mod", [
    (x % 0, _zero_modulus),
    (c % d, lambda c, d: const(c % d)),
    (x % d, lambda x, d: mul(mod(mul(x, -1), -d), -1) if d < 0 else None),  # a % -d == -((-a) % d)
    (x % 1, lambda x: ZERO),
    (x % d, lambda x, d: x if _below(x, d) else None),  # 0 <= x < d
    (x % d, _mod_drop_multiples),  # (q*d + r) % d == r % d
    (x % x, lambda x: ZERO),
    (x % b, _mod_split),  # (q*b + r) % b == r % b
])

# r % d for a constant d > 1, r with every coefficient smaller than d in magnitude and 0 <= const < d
MOD_CONST_REST = Rules("mod-const-rest", [
    (c % d, lambda c, d: const(c % d)),
    (x % d, _mod_gcd),  # (g*y) % (g*e) == g * (y % e)
    (x % d, _mod_bucket),  # r in [q0*d, q0*d + d): r - q0*d
    ((x % m) % d, lambda x, m, d: mod(x, d) if _is_multiple(m, const(d)) else None),  # (x % (q*d)) % d == x % d
    (x % d, lambda x, d: _mod_negated(x, const(d))),  # (c - x) % d == d - 1 - (x - c - 1) % d
    (x % d, _mod_nested),  # (g*y + s) % (g*e) == g*((y + q0) % e) + (s - g*q0)
    (x % b, _mod_node),
])

# r % b for a symbolic b, r the remainder of a polynomial division by b
MOD_REST = Rules("mod-rest", [
    (x % b, lambda x, b: x if _in_0_b(x, b) else None),  # r in [0, b)
    (x % b, lambda x, b: add(x, b) if _in_minus_b_0(x, b) else None),  # r in [-b, 0)
    ((x % m) % b, lambda x, m, b: mod(x, b) if _is_multiple(m, b) else None),  # (x % (q*b)) % b == x % b
    (x % b, _mod_negated),  # (c - x) % b == b - 1 - (x - c - 1) % b for b > 0
    (x % b, _mod_nested_symbolic),  # (g*y + s) % (g*m) == g*(y % m) + s, 0 <= s < g
    (x % b, _mod_node),
])


def mod(a: IntLike, b: IntLike) -> Expr:
    return rewrite(MOD, sym(a), sym(b))
