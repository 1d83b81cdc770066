"""Symbolic integers: shapes, named dimensions, loop indices and index arithmetic.

An `Expr` is an immutable, hash-consed integer expression: two expressions built the same way are the
same object, so ``is`` is equality of canonical forms. Construction always goes through the smart
constructors below, which keep every expression in a canonical form:

* linear combinations are flattened into one ``add`` node: a constant plus sorted ``(term, coef)``
  pairs, so like terms combine and cancel (``(i*8 + j) - j -> i*8``);
* products are expanded over sums and their factors sorted;
* ``floordiv`` / ``mod`` split off the part of the numerator that the divisor divides exactly and fold
  the rest when bounds prove it stays inside one quotient bucket (``(i*8 + j) // 8 -> i`` when
  ``0 <= j < 8``), also for symbolic divisors (``(i*S + j) // S -> i`` when ``j`` is an index over
  ``S``, and ``(i*(S+2) + j) // (S+2) -> i``); a divisor's factor that the numerator's small part
  cannot reach is peeled off (``(2*i + j) // 4 -> i // 2`` when ``0 <= j < 2``);
* ``(x // m) * m + x % m`` recombines to ``x`` and ``(x // m) * m - x`` to ``-(x % m)`` — the
  identities that make a reshape of a reshape a plain index again;
* comparisons keep positive terms on the left and negated negative terms on the right; conjunctions
  are flattened, deduplicated, sorted, and keep only the stronger of two bounds on one expression.

Every node carries numeric bounds ``vmin``/``vmax`` (possibly infinite for unbounded named dims).
Index variables may carry a *symbolic* upper bound (``i`` in ``[0, S-1]``). `lower_bound` /
`upper_bound` give pointwise symbolic bounds in which index variables are replaced by their bounds
while named dims stay themselves (``S*H - 1 - (H*i + j) >= S*H - 1 - (H*(S-1) + H-1) = 0``); proofs
(`prove_le`, `prove_lt`) and the div/mod folds use them when numeric bounds are not enough.

Division and modulo are *floor* division and *floor* modulo, as in Python. `render_c` emits plain C
``/`` and ``%`` only where both operands are provably non-negative, and floor helpers otherwise.
Booleans are the integers 0 and 1; ``and``/``not`` always produce 0 or 1.
"""
from __future__ import annotations

import functools
import math
import weakref
from typing import Iterable, Mapping, Union

import numpy as np

INF = math.inf
IntLike = Union[int, "Expr"]

_INTERN: "weakref.WeakValueDictionary[tuple, Expr]" = weakref.WeakValueDictionary()


class Expr:
    """A canonical integer expression. Identity is structural equality (hash-consing)."""

    __slots__ = ("op", "args", "vmin", "vmax", "key", "_lb", "_ub", "_fk", "__weakref__")

    op: str
    args: tuple
    vmin: float
    vmax: float
    key: str

    # ---- arithmetic sugar (all results are canonical) ----
    def __add__(self, o: IntLike) -> "Expr":
        return add(self, o)

    def __radd__(self, o: IntLike) -> "Expr":
        return add(o, self)

    def __sub__(self, o: IntLike) -> "Expr":
        return add(self, -o if isinstance(o, int) else mul(o, -1))

    def __rsub__(self, o: IntLike) -> "Expr":
        return add(o, mul(self, -1))

    def __mul__(self, o: IntLike) -> "Expr":
        return mul(self, o)

    def __rmul__(self, o: IntLike) -> "Expr":
        return mul(o, self)

    def __neg__(self) -> "Expr":
        return mul(self, -1)

    def __floordiv__(self, o: IntLike) -> "Expr":
        return floordiv(self, o)

    def __rfloordiv__(self, o: IntLike) -> "Expr":
        return floordiv(o, self)

    def __mod__(self, o: IntLike) -> "Expr":
        return mod(self, o)

    def __rmod__(self, o: IntLike) -> "Expr":
        return mod(o, self)

    # ---- queries ----
    @property
    def is_const(self) -> bool:
        return self.op == "const"

    @property
    def value(self) -> int:
        if self.op != "const":
            raise ValueError(f"symbolic expression {self} has no constant value")
        return self.args[0]

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __bool__(self) -> bool:
        raise TypeError(f"the truth value of symbolic expression {self} is undefined; use ember.symbolic.lt/eq")

    def __repr__(self) -> str:
        return self.key

    def __reduce__(self):  # pickling rebuilds through the constructors (keeps interning intact)
        return (from_json, (to_json(self),))


def _new(op: str, args: tuple, vmin: float, vmax: float, key: str) -> Expr:
    if vmin == vmax and op not in ("const", "var"):  # a proven single value is that constant: one
        return const(vmin)                            # form per value (min(0, 0 % -N) is min(0, 0))
    ik = (op, args)
    e = _INTERN.get(ik)
    if e is not None:
        return e
    e = object.__new__(Expr)
    e.op, e.args, e.vmin, e.vmax, e.key = op, args, vmin, vmax, key
    e._lb = e._ub = e._fk = None
    _INTERN[ik] = e
    return e


# ------------------------------------------------------------------------------------------------
# leaves

def const(v: int) -> Expr:
    v = int(v)
    e = _INTERN.get(("const", (v,)))
    return e if e is not None else _new("const", (v,), v, v, str(v))


def var(name: str, lo: int = 0, hi: IntLike | None = None) -> Expr:
    """A named integer in [lo, hi] (inclusive). ``hi`` may itself be an expression (e.g. ``S - 1``).

    A variable whose range is one point is that constant (an index over an extent of 1 is 0)."""
    lo = int(lo)
    if hi is None:
        return _new("var", (name, lo, None), lo, INF, name)
    hi_e = sym(hi)
    if hi_e.is_const:
        if hi_e.value == lo:
            return const(lo)
        return _new("var", (name, lo, hi_e.value), lo, hi_e.value, name)
    return _new("var", (name, lo, hi_e), lo, hi_e.vmax, name)


def dim(name: str) -> Expr:
    """A named dimension bound at run time (at least 1)."""
    return var(name, 1, None)


def index_var(name: str, extent: IntLike) -> Expr:
    """A loop index over ``range(extent)``."""
    extent = sym(extent)
    e = _INDEX_VARS.get((name, extent))
    if e is None:
        e = var(name, 0, extent - 1)
        if len(_INDEX_VARS) > 1 << 14:  # a memo, not a registry: drop it when it grows large
            _INDEX_VARS.clear()
        _INDEX_VARS[(name, extent)] = e
    return e


_INDEX_VARS: dict = {}


def sym(x) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, (bool, np.bool_)):
        return const(int(x))
    if isinstance(x, (int, np.integer)):
        return const(int(x))
    if isinstance(x, str):
        return dim(x)
    raise TypeError(f"cannot make a symbolic integer from {type(x).__name__} {x!r}")


ZERO = const(0)
ONE = const(1)


# ------------------------------------------------------------------------------------------------
# canonical order: by printed key; distinct expressions that print alike (same variable name with
# different bounds) are ordered by their full structure so that sorting never depends on the order
# in which terms were met.

def _full_key(e: Expr) -> str:
    if e._fk is None:
        if e.op == "var":
            name, lo, hi = e.args
            e._fk = f"{name}[{lo}:{'' if hi is None else _full_key(sym(hi))}]"
        elif e.op == "const":
            e._fk = e.key
        elif e.op == "add":
            e._fk = f"add({e.args[0]};" + ";".join(f"{k}*{_full_key(t)}" for t, k in e.args[1]) + ")"
        else:
            e._fk = f"{e.op}(" + ";".join(_full_key(a) for a in e.args) + ")"
    return e._fk


def _sorted(xs: Iterable[Expr]) -> list:
    xs = list(xs)
    out = sorted(xs, key=lambda e: e.key)
    if any(a.key == b.key for a, b in zip(out, out[1:])):
        out = sorted(xs, key=lambda e: (e.key, _full_key(e)))
    return out


# ------------------------------------------------------------------------------------------------
# interval helpers

def _imul(a: float, b: float) -> float:
    if a == 0 or b == 0:  # 0 * inf is 0 here: a zero factor makes the product zero
        return 0
    return a * b


def _mul_bounds(a: tuple, b: tuple) -> tuple:
    c = [_imul(x, y) for x in a for y in b]
    return min(c), max(c)


def _fdiv_num(r: float, b: float) -> float:
    """floor(r / b) for b >= 1, where r and b may be infinite (the limits)."""
    if r in (INF, -INF):
        return r
    if b == INF:
        return 0 if r >= 0 else -1
    return int(r) // int(b)


def _div_bounds(r_lo: float, r_hi: float, b_lo: float, b_hi: float) -> tuple:
    """Bounds of floor(r / b) for r in [r_lo, r_hi] and b in [b_lo, b_hi], b_lo >= 1.

    floor(r/b) is monotone in r (b > 0) and, for r of one sign, monotone in b, so the extremes are
    at the corners."""
    c = [_fdiv_num(r, b) for r in (r_lo, r_hi) for b in (b_lo, b_hi)]
    return min(c), max(c)


def _trunc_div(k: int, d: int) -> int:
    """k / d rounded toward zero (d > 0): the part of a coefficient k that d divides, keeping the
    remainder k - q*d of k's sign and smaller than d in magnitude."""
    return k // d if k >= 0 else -((-k) // d)


# ------------------------------------------------------------------------------------------------
# linear combinations

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
    c, terms = 1, {}
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
            qc, qm = _lin_prod(floordiv(x, m), m, cof)
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
                return _replace(c - k * qc + k * xc, terms, [*qm, *xt], -k, mul(mod(x, m), cof))
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
    c, terms = 0, {}
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


# ------------------------------------------------------------------------------------------------
# symbolic bounds and proofs

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
    op = e.op
    bnd = upper_bound if upper else lower_bound
    other = lower_bound if upper else upper_bound
    if op == "var":
        name, lo, hi = e.args
        if hi is None:  # a named dim (or an unbounded variable): it bounds itself
            return e
        return sym(hi) if upper else const(lo)
    if op == "add":  # monotone in each term: a positive coefficient takes the same-side bound
        c, terms = e.args
        return sum_of([c] + [k * (bnd(t) if k > 0 else other(t)) for t, k in terms])
    if op == "mul":
        fs = e.args
        if all(f.vmin >= 0 for f in fs):
            # 0 <= f <= U(f) for each factor, so the product is at most the product of the bounds;
            # lower: a factor's lower bound is used only when it is itself non-negative.
            if upper:
                return prod(upper_bound(f) for f in fs)
            ls = [lower_bound(f) for f in fs]
            return prod(x if x.vmin >= 0 else const(int(f.vmin)) for x, f in zip(ls, fs))
        return _numeric_or_self(e, upper)
    if op == "div":  # floor(x / b) is monotone in x for fixed b > 0
        x, b = e.args
        if b.vmin >= 1:
            return floordiv(bnd(x), b)
        return _numeric_or_self(e, upper)
    if op == "mod":  # 0 <= x % b <= b - 1 for b > 0
        x, b = e.args
        if b.vmin >= 1:
            return sub(b, 1) if upper else ZERO
        return _numeric_or_self(e, upper)
    if op == "min":
        a, b = e.args
        if upper:  # min(a, b) <= a and <= b: take the tighter one
            ua, ub = upper_bound(a), upper_bound(b)
            return ua if ua.vmax <= ub.vmax else ub
        return minimum(lower_bound(a), lower_bound(b))
    if op == "max":
        a, b = e.args
        if upper:
            return maximum(upper_bound(a), upper_bound(b))
        la, lb = lower_bound(a), lower_bound(b)
        return la if la.vmin >= lb.vmin else lb
    return _numeric_or_self(e, upper)  # lt / and / not: 0 or 1


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
    return _range(sub(b, a))[0] >= 0


def prove_lt(a: IntLike, b: IntLike) -> bool:
    return _range(sub(b, a))[0] >= 1


# ------------------------------------------------------------------------------------------------
# division and modulo (floor semantics)

def _divides(b: Expr, t: Expr) -> Expr | None:
    """t / b if b's factors are a sub-multiset of t's factors (ONE when t is b), else None."""
    tf = _factors(t)
    for f in _factors(b):
        if f in tf:
            tf.remove(f)
        else:
            return None
    return _make_mul(tf) if tf else ONE


def _divisors(d: int) -> list:
    """Divisors of d strictly between 1 and d, largest first."""
    out = set()
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
        lo, hi = _range(small)
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
        big, small = {}, {}
        for t, k in terms.items():
            q = _divides(g, t)
            if q is not None:
                big[q] = big.get(q, 0) + k
            else:
                small[t] = k
        if not big:
            continue
        s = _make_add(c, small)
        if prove_le(0, s) and prove_lt(s, g):
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


def floordiv(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if b.is_const:
        d = b.value
        if d == 0:
            raise ZeroDivisionError(f"symbolic floor division of {a} by zero")
        if a.is_const:
            return const(a.value // d)
        if d < 0:  # floor(a / -d) == floor(-a / d)
            return floordiv(mul(a, -1), -d)
        if d == 1:
            return a
        # (q*d + r) // d == q + r // d for integer q: take out the constant's floor quotient and each
        # coefficient's truncated quotient
        c, terms = _linear(a)
        qc, rc = divmod(c, d)
        quot, rest = {}, {}
        for t, k in terms.items():
            q = _trunc_div(k, d)
            if q:
                quot[t] = q
            if k - q * d:
                rest[t] = k - q * d
        return add(_make_add(qc, quot), _div_const(_make_add(rc, rest), d))
    if a is b:
        return ONE
    q, r = _split_symbolic(a, b)
    # r in [0, b) -> r // b == 0;  r in [-b, 0) -> r // b == -1
    if prove_le(0, r) and prove_lt(r, b):
        return q
    if prove_le(mul(b, -1), r) and prove_lt(r, 0):
        return add(q, -1)
    if r.op == "div" and r.args[1].vmin >= 1 and b.vmin >= 1:  # (x // e) // b == x // (e*b) for e, b > 0
        return add(q, floordiv(r.args[0], mul(r.args[1], b)))
    y = _negated(*_linear(r)) if b.vmin >= 1 else None
    if y is not None:  # (c - x) // b == -((x - c - 1) // b) - 1 for b > 0
        return add(q, sub(-1, floordiv(y, b)))
    ns = _nested_symbolic(r, b)
    if ns is not None:
        _, m, y, _ = ns
        return add(q, floordiv(y, m))
    if b.vmin >= 1:
        lo, hi = _div_bounds(r.vmin, r.vmax, b.vmin, b.vmax)
    else:
        lo, hi = -INF, INF
    bk = f"({b.key})" if b.op == "mul" else b.key
    return add(q, _new("div", (r, b), lo, hi, f"({r.key} // {bk})"))


def _div_const(r: Expr, d: int) -> Expr:
    """r // d for d > 1, r with every coefficient smaller than d in magnitude."""
    if r.is_const:
        return const(r.value // d)
    c, terms = _linear(r)
    g = math.gcd(d, c, *terms.values())
    if g > 1:  # (g*y) // (g*e) == y // e
        r, d = _make_add(c // g, {t: k // g for t, k in terms.items()}), d // g
        if d == 1:
            return r
        c, terms = _linear(r)
    lo, hi = _range(r)
    if lo != -INF and hi != INF and int(lo) // d == int(hi) // d:  # r stays in one bucket
        return const(int(lo) // d)
    if r.op == "div" and r.args[1].vmin >= 1:  # (x // e) // d == x // (e*d) for e, d > 0
        return floordiv(r.args[0], mul(r.args[1], d))
    y = _negated(c, terms)
    if y is not None:  # (c - x) // d == -((x - c - 1) // d) - 1
        return sub(-1, floordiv(y, d))
    ns = _nested_split(c, terms, d)
    if ns is not None:
        g, y, _ = ns
        return floordiv(y, d // g)
    lo, hi = _div_bounds(r.vmin, r.vmax, d, d)
    return _new("div", (r, const(d)), lo, hi, f"({r.key} // {d})")


def mod(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if b.is_const:
        d = b.value
        if d == 0:
            raise ZeroDivisionError(f"symbolic modulo of {a} by zero")
        if a.is_const:
            return const(a.value % d)
        if d < 0:  # a % -d == -((-a) % d) in floor semantics
            return mul(mod(mul(a, -1), -d), -1)
        if d == 1:
            return ZERO
        lo, hi = _range(a)
        if lo >= 0 and hi < d:
            return a
        # (q*d + r) % d == r % d: drop the constant's and each coefficient's multiple of d
        c, terms = _linear(a)
        rest = {t: k - _trunc_div(k, d) * d for t, k in terms.items() if k % d != 0}
        return _mod_const(_make_add(c % d, rest), d)
    if a is b:
        return ZERO
    _, r = _split_symbolic(a, b)
    if prove_le(0, r) and prove_lt(r, b):
        return r
    if prove_le(mul(b, -1), r) and prove_lt(r, 0):
        return add(r, b)
    if r.op == "mod" and _is_multiple(r.args[1], b):  # (x % (q*b)) % b == x % b
        return mod(r.args[0], b)
    y = _negated(*_linear(r)) if b.vmin >= 1 else None
    if y is not None:  # (c - x) % b == b - 1 - (x - c - 1) % b for b > 0
        return sub(sub(b, 1), mod(y, b))
    ns = _nested_symbolic(r, b)
    if ns is not None:
        g, m, y, sm_ = ns
        return add(mul(mod(y, m), g), sm_)
    if b.vmin >= 1:
        lo, hi = 0, b.vmax - 1
        if r.vmin >= 0:  # x % b <= x for x >= 0
            hi = min(hi, r.vmax)
    elif b.vmax <= -1:
        lo, hi = b.vmin + 1, 0
        if r.vmax <= 0:
            lo = max(lo, r.vmin)
    else:
        lo, hi = -INF, INF
    bk = f"({b.key})" if b.op == "mul" else b.key
    return _new("mod", (r, b), lo, hi, f"({r.key} % {bk})")


def _mod_const(r: Expr, d: int) -> Expr:
    """r % d for d > 1, r with every coefficient smaller than d in magnitude and 0 <= const < d."""
    if r.is_const:
        return const(r.value % d)
    c, terms = _linear(r)
    g = math.gcd(d, c, *terms.values())
    if g > 1:  # (g*y) % (g*e) == g * (y % e)
        return mul(mod(_make_add(c // g, {t: k // g for t, k in terms.items()}), d // g), g)
    lo, hi = _range(r)
    if lo != -INF and hi != INF and int(lo) // d == int(hi) // d:  # r in [q0*d, q0*d + d): r - q0*d
        return sub(r, (int(lo) // d) * d)
    if r.op == "mod" and _is_multiple(r.args[1], const(d)):  # (x % (q*d)) % d == x % d
        return mod(r.args[0], d)
    y = _negated(c, terms)
    if y is not None:  # (c - x) % d == d - 1 - (x - c - 1) % d
        return sub(d - 1, mod(y, d))
    ns = _nested_split(c, terms, d)
    if ns is not None:
        g, y, s = ns
        return add(mul(mod(y, d // g), g), s)
    hi = d - 1 if r.vmin < 0 else min(d - 1, r.vmax)
    return _new("mod", (r, const(d)), 0, hi, f"({r.key} % {d})")


# ------------------------------------------------------------------------------------------------
# min / max / comparisons / logic (booleans are the integers 0 and 1)

def minimum(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if a is b or prove_le(a, b):
        return a
    if prove_le(b, a):
        return b
    x, y = _sorted((a, b))
    return _new("min", (x, y), min(a.vmin, b.vmin), min(a.vmax, b.vmax), f"min({x.key}, {y.key})")


def maximum(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if a is b or prove_le(b, a):
        return a
    if prove_le(a, b):
        return b
    x, y = _sorted((a, b))
    return _new("max", (x, y), max(a.vmin, b.vmin), max(a.vmax, b.vmax), f"max({x.key}, {y.key})")


def lt(a: IntLike, b: IntLike) -> Expr:
    """a < b as 0/1. Canonical form: with a - b = c + P - Q (P, Q positive combinations, c constant),
    ``P < Q - c``; or ``c < Q`` when P is empty. Coefficients are divided by their gcd:
    g*X + c < 0  <=>  X + c // g < 0  over the integers."""
    a, b = sym(a), sym(b)
    d = sub(a, b)
    lo, hi = _range(d)
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
        return prove_le(py, qy)
    if py is qy:  # qx <= px and px < y  =>  qx < y
        return prove_le(qx, px)
    return False


def logical_and(a: IntLike, b: IntLike) -> Expr:
    parts: list = []
    stack = [sym(b), sym(a)]
    while stack:  # flatten nested conjunctions
        x = stack.pop()
        if x.op == "and":
            stack.extend(reversed(x.args))
            continue
        lo, hi = _range(x)
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


def logical_not(a: IntLike) -> Expr:
    a = sym(a)
    lo, hi = _range(a)
    if lo > 0 or hi < 0:
        return ZERO
    if lo == hi == 0:
        return ONE
    if a.op == "lt":  # !(x < y)  ==  y < x + 1  over the integers
        return lt(a.args[1], add(a.args[0], 1))
    if a.op == "not" and _is_bool(a.args[0]):  # !!y == y when y is 0 or 1
        return a.args[0]
    return _new("not", (a,), 0, 1, f"!{a.key}")


def all_of(xs: Iterable[IntLike]) -> Expr:
    out = ONE
    for x in xs:
        out = logical_and(out, x)
    return out


# ------------------------------------------------------------------------------------------------
# traversal: substitution, free variables, evaluation

_BUILD = {
    "div": lambda a, b: floordiv(a, b),
    "mod": lambda a, b: mod(a, b),
    "min": lambda a, b: minimum(a, b),
    "max": lambda a, b: maximum(a, b),
    "lt": lambda a, b: lt(a, b),
    "and": lambda a, b: logical_and(a, b),
    "not": lambda a: logical_not(a),
}


def substitute(e: IntLike, mapping: Mapping[str, IntLike]) -> Expr:
    """Replace variables by name, simultaneously, and re-canonicalise. A variable whose symbolic
    bound mentions a replaced name gets the substituted bound (``i`` in ``[0, S-1]`` with ``S = 4``
    becomes ``i`` in ``[0, 3]``)."""
    e = sym(e)
    m = {k: sym(v) for k, v in mapping.items()}
    if not m:
        return e
    memo: dict = {}

    def go(x: Expr) -> Expr:
        r = memo.get(x)
        if r is not None:
            return r
        op = x.op
        if op == "const":
            r = x
        elif op == "var":
            name, lo, hi = x.args
            if name in m:
                r = m[name]
            elif isinstance(hi, Expr):
                r = var(name, lo, go(hi))
            else:
                r = x
        elif op == "add":
            r = sum_of([x.args[0]] + [mul(go(t), k) for t, k in x.args[1]])
        elif op == "mul":
            r = ONE
            for f in x.args:
                r = mul(r, go(f))
        else:
            r = _BUILD[op](*(go(a) for a in x.args))
        memo[x] = r
        return r

    return go(e)


def free_vars(e: IntLike) -> set:
    e = sym(e)
    out: set = set()
    seen: set = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if x.op == "var":
            out.add(x.args[0])
        elif x.op == "add":
            stack.extend(t for t, _ in x.args[1])
        elif x.op != "const":
            stack.extend(x.args)
    return out


def evaluate(e: IntLike, env: Mapping[str, object] | None = None):
    """Evaluate with Python ints or numpy integer arrays bound to the variables (floor semantics)."""
    e = sym(e)
    env = env or {}
    memo: dict = {}

    def go(x: Expr):
        if x in memo:
            return memo[x]
        op = x.op
        if op == "const":
            r = x.args[0]
        elif op == "var":
            name = x.args[0]
            if name not in env:
                raise KeyError(f"no value bound for symbolic dimension or index {name!r}")
            r = env[name]
        elif op == "add":
            r = x.args[0]
            for t, k in x.args[1]:
                r = r + go(t) * k
        elif op == "mul":
            r = 1
            for f in x.args:
                r = r * go(f)
        elif op == "div":
            r = go(x.args[0]) // go(x.args[1])
        elif op == "mod":
            r = go(x.args[0]) % go(x.args[1])
        elif op == "min":
            r = np.minimum(go(x.args[0]), go(x.args[1]))
        elif op == "max":
            r = np.maximum(go(x.args[0]), go(x.args[1]))
        elif op == "lt":
            r = go(x.args[0]) < go(x.args[1])
        elif op == "and":
            r = np.logical_and(go(x.args[0]), go(x.args[1]))
        elif op == "not":
            r = np.logical_not(go(x.args[0]))
        else:  # pragma: no cover
            raise AssertionError(op)
        if isinstance(r, (np.bool_, bool)):
            r = int(r)
        elif isinstance(r, np.ndarray) and r.dtype == np.bool_:
            r = r.astype(np.int64)
        elif isinstance(r, np.integer):
            r = int(r)
        memo[x] = r
        return r

    return go(e)


# ------------------------------------------------------------------------------------------------
# rendering to C

def render_c(e: IntLike, names: Mapping[str, str] | None = None) -> str:
    """C source for e. ``names`` renames variables (e.g. index ``_i0`` -> a loop variable).

    Uses the helpers EM_FDIV / EM_FMOD / EM_MIN / EM_MAX which each backend's prelude defines;
    plain ``/`` and ``%`` where both operands are provably non-negative (then C's truncating
    division is floor division).
    """
    e = sym(e)
    names = names or {}

    def go(x: Expr) -> str:
        op = x.op
        if op == "const":
            return str(x.args[0])
        if op == "var":
            return names.get(x.args[0], x.args[0])
        if op == "add":
            parts = []
            for t, k in x.args[1]:
                s = go(t)
                if k == 1:
                    parts.append(("+", s))
                elif k == -1:
                    parts.append(("-", s))
                elif k < 0:
                    parts.append(("-", f"{-k}*{s}"))
                else:
                    parts.append(("+", f"{k}*{s}"))
            c = x.args[0]
            if c > 0:
                parts.append(("+", str(c)))
            elif c < 0:
                parts.append(("-", str(-c)))
            out = parts[0][1] if parts[0][0] == "+" else "-" + parts[0][1]
            for sgn, s in parts[1:]:
                out += f" {sgn} {s}"
            return f"({out})"
        if op == "mul":
            return "(" + "*".join(go(f) for f in x.args) + ")"
        if op in ("div", "mod"):
            a, b = x.args
            if _range(a)[0] >= 0 and _range(b)[0] > 0:
                return f"({go(a)} {'/' if op == 'div' else '%'} {go(b)})"
            return f"EM_F{'DIV' if op == 'div' else 'MOD'}({go(a)}, {go(b)})"
        if op == "min":
            return f"EM_MIN({go(x.args[0])}, {go(x.args[1])})"
        if op == "max":
            return f"EM_MAX({go(x.args[0])}, {go(x.args[1])})"
        if op == "lt":
            return f"({go(x.args[0])} < {go(x.args[1])})"
        if op == "and":
            return f"({go(x.args[0])} && {go(x.args[1])})"
        if op == "not":
            return f"(!{go(x.args[0])})"
        raise AssertionError(op)  # pragma: no cover

    return go(e)


C_HELPERS = """\
#define EM_FDIV(a, b) ((a) / (b) - ((((a) % (b)) != 0) && (((a) < 0) != ((b) < 0))))
#define EM_FMOD(a, b) ((a) % (b) + (((((a) % (b)) != 0) && (((a) < 0) != ((b) < 0))) ? (b) : 0))
#define EM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EM_MAX(a, b) ((a) > (b) ? (a) : (b))
"""


# ------------------------------------------------------------------------------------------------
# JSON form (for saving graphs)

def to_json(e: IntLike):
    e = sym(e)
    if e.op == "const":
        return e.args[0]
    if e.op == "var":
        name, lo, hi = e.args
        return ["var", name, lo, to_json(hi) if hi is not None else None]
    if e.op == "add":
        return ["add", e.args[0], [[to_json(t), k] for t, k in e.args[1]]]
    return [e.op] + [to_json(a) for a in e.args]


def from_json(j) -> Expr:
    """Rebuild through the constructors; canonical forms are fixpoints, so this is the same object."""
    if isinstance(j, int):
        return const(j)
    op = j[0]
    if op == "var":
        return var(j[1], j[2], from_json(j[3]) if j[3] is not None else None)
    if op == "add":
        return sum_of([j[1]] + [mul(from_json(t), k) for t, k in j[2]])
    if op == "mul":
        return prod(from_json(a) for a in j[1:])
    return _BUILD[op](*(from_json(a) for a in j[1:]))


def shape_str(shape: Iterable[IntLike]) -> str:
    shape = tuple(shape)
    return "(" + ", ".join(str(sym(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"
