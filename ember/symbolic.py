"""Symbolic integers: shapes, named dimensions, loop indices and index arithmetic.

An `Expr` is an immutable, hash-consed integer expression. Construction always goes through the
smart constructors below, which keep every expression in a canonical form:

* linear combinations are flattened into one ``add`` node: a constant plus sorted ``(term, coef)``
  pairs, so like terms combine and cancel (``(i*8 + j) - j*1 -> i*8``);
* products are expanded over sums and their factors sorted;
* ``floordiv`` / ``mod`` split off the part of the numerator that the divisor divides exactly and fold
  the rest when its bounds prove it stays inside one quotient bucket
  (``(i*8 + j) // 8 -> i`` when ``0 <= j < 8``), also for symbolic divisors (``(i*S + j) // S -> i``
  when ``j`` is an index over ``S``);
* ``(x // c) * c + x % c`` recombines to ``x`` — the identity that makes a reshape of a reshape a
  plain index again.

Every node carries numeric bounds ``vmin``/``vmax`` (possibly infinite for unbounded named dims).
Index variables may carry a *symbolic* upper bound (``i`` in ``[0, S-1]``), which the div/mod rules use
to prove ``j < S`` when ``S`` is a named dimension.

Division and modulo are *floor* division and *floor* modulo, as in Python. `render_c` emits plain C
``/`` and ``%`` only where both operands are provably non-negative, and floor helpers otherwise.
"""
from __future__ import annotations

import math
import weakref
from typing import Iterable, Mapping, Union

import numpy as np

INF = math.inf
IntLike = Union[int, "Expr"]

_INTERN: "weakref.WeakValueDictionary[tuple, Expr]" = weakref.WeakValueDictionary()


class Expr:
    """A canonical integer expression. Identity is structural equality (hash-consing)."""

    __slots__ = ("op", "args", "vmin", "vmax", "key", "__weakref__")

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
        return add(self, mul(o, -1))

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
    ik = (op, args)
    e = _INTERN.get(ik)
    if e is not None:
        return e
    e = object.__new__(Expr)
    e.op, e.args, e.vmin, e.vmax, e.key = op, args, vmin, vmax, key
    _INTERN[ik] = e
    return e


# ------------------------------------------------------------------------------------------------
# leaves

def const(v: int) -> Expr:
    v = int(v)
    return _new("const", (v,), v, v, str(v))


def var(name: str, lo: int = 0, hi: IntLike | None = None) -> Expr:
    """A named integer in [lo, hi] (inclusive). ``hi`` may itself be an expression (e.g. ``S - 1``)."""
    if hi is None:
        vmax: float = INF
        hi_arg = None
    else:
        hi_e = sym(hi)
        vmax = hi_e.vmax
        hi_arg = hi_e if not hi_e.is_const else hi_e.value
    return _new("var", (name, int(lo), hi_arg), int(lo), vmax, name)


def dim(name: str) -> Expr:
    """A named dimension bound at run time (at least 1)."""
    return var(name, 1, None)


def index_var(name: str, extent: IntLike) -> Expr:
    """A loop index over ``range(extent)``."""
    return var(name, 0, sym(extent) - 1)


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
# interval helpers

def _imul(a: float, b: float) -> float:
    if a == 0 or b == 0:
        return 0
    return a * b


def _mul_bounds(a: tuple, b: tuple) -> tuple:
    c = [_imul(x, y) for x in a for y in b]
    return min(c), max(c)


def _floor_div_num(a: float, b: int) -> float:
    if a in (INF, -INF):
        return a if b > 0 else -a
    return a // b


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
    if len(factors) == 1:
        return factors[0]
    fs = tuple(sorted(factors, key=lambda f: f.key))
    lo, hi = 1, 1
    for f in fs:
        lo, hi = _mul_bounds((lo, hi), (f.vmin, f.vmax))
    return _new("mul", fs, lo, hi, "*".join(f.key for f in fs))


def _recombine_divmod(c: int, terms: dict) -> tuple[int, dict]:
    """(x // m) * m + x % m  ->  x   (also with a common coefficient and symbolic m)."""
    changed = True
    while changed:
        changed = False
        for t, k in list(terms.items()):
            if t.op != "mod" or t not in terms:
                continue
            x, m = t.args
            q = floordiv(x, m)
            qm = mul(q, m)
            qc, qterms = _linear(qm)
            if qc != 0 or len(qterms) != 1:
                continue
            (qt, qk), = qterms.items()
            if terms.get(qt) == k * qk:
                del terms[t]
                del terms[qt]
                xc, xterms = _linear(mul(x, k))
                c += xc
                for xt, xk in xterms.items():
                    terms[xt] = terms.get(xt, 0) + xk
                    if terms[xt] == 0:
                        del terms[xt]
                changed = True
                break
    return c, terms


def _make_add(c: int, terms: dict) -> Expr:
    terms = {t: k for t, k in terms.items() if k != 0}
    if any(t.op == "mod" for t in terms):
        c, terms = _recombine_divmod(c, terms)
    if not terms:
        return const(c)
    if c == 0 and len(terms) == 1:
        (t, k), = terms.items()
        if k == 1:
            return t
    items = tuple(sorted(terms.items(), key=lambda tk: tk[0].key))
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


def add(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if a.is_const and b.is_const:
        return const(a.value + b.value)
    ca, ta = _linear(a)
    cb, tb = _linear(b)
    for t, k in tb.items():
        ta[t] = ta.get(t, 0) + k
    return _make_add(ca + cb, ta)


def mul(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if a.is_const and b.is_const:
        return const(a.value * b.value)
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


def sum_of(xs: Iterable[IntLike]) -> Expr:
    out = ZERO
    for x in xs:
        out = add(out, x)
    return out


def prod(xs: Iterable[IntLike]) -> Expr:
    out = ONE
    for x in xs:
        out = mul(out, x)
    return out


# ------------------------------------------------------------------------------------------------
# proofs by bounds

def _lower_bound(e: Expr) -> float:
    """A lower bound of e that also uses symbolic upper bounds of index variables.

    For each linear term ``k * v`` with ``v`` a variable whose upper bound is symbolic and ``k < 0``,
    substitute the bound (the smallest value the term can take) before taking numeric bounds.
    """
    if e.vmin != -INF or e.op != "add":
        return e.vmin
    c, terms = _linear(e)
    sub = {}
    for t, k in terms.items():
        if t.op == "var" and isinstance(t.args[2], Expr) and k < 0:
            sub[t.args[0]] = t.args[2]
    if not sub:
        return e.vmin
    return substitute(e, sub).vmin


def prove_le(a: IntLike, b: IntLike) -> bool:
    """True only if a <= b is certain for every value of the variables."""
    return _lower_bound(sub(b, a)) >= 0


def prove_lt(a: IntLike, b: IntLike) -> bool:
    return _lower_bound(sub(b, a)) >= 1


def sub(a: IntLike, b: IntLike) -> Expr:
    return add(a, mul(b, -1))


# ------------------------------------------------------------------------------------------------
# division and modulo (floor semantics)

def _divides(b: Expr, t: Expr) -> Expr | None:
    """t / b if b's factors are a sub-multiset of t's factors, else None."""
    tf = _factors(t)
    for f in _factors(b):
        if f in tf:
            tf.remove(f)
        else:
            return None
    return _make_mul(tf) if tf else ONE


def _scaled_monomial(b: Expr) -> tuple | None:
    """(c, m) when b == c*m for an integer c != 1 and a non-constant monomial m."""
    if b.op == "add" and b.args[0] == 0 and len(b.args[1]) == 1:
        (t, k), = b.args[1]
        if k != 1:
            return k, t
    return None


def floordiv(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if b.is_const:
        d = b.value
        if d == 0:
            raise ZeroDivisionError(f"symbolic floor division of {a} by zero")
        if a.is_const:
            return const(a.value // d)
        if d == 1:
            return a
        if d < 0:
            return floordiv(mul(a, -1), -d)
        c, terms = _linear(a)
        qc, rc = divmod(c, d)
        exact = {t: k // d for t, k in terms.items() if k % d == 0}
        rest = {t: k for t, k in terms.items() if k % d != 0}
        r = _make_add(rc, rest)
        g = math.gcd(d, rc, *rest.values())
        if g > 1:
            r, d = _make_add(rc // g, {t: k // g for t, k in rest.items()}), d // g
        lo, hi = _floor_div_num(r.vmin, d), _floor_div_num(r.vmax, d)
        if lo == hi:
            qr = const(int(lo))
        elif r.op == "div" and r.args[1].is_const and r.args[1].value > 0:
            qr = floordiv(r.args[0], r.args[1].value * d)
        elif d == 1:
            qr = r
        else:
            qr = _new("div", (r, const(d)), lo, hi, f"({r.key} // {d})")
        return add(_make_add(qc, exact), qr)
    if a is b:
        return ONE
    sc = _scaled_monomial(b)
    if sc is not None and sc[0] > 0 and sc[1].vmin > 0:  # x // (c*m) == (x // c) // m for c, m > 0
        return floordiv(floordiv(a, sc[0]), sc[1])
    c, terms = _linear(a)
    exact, rest = {}, {}
    for t, k in terms.items():
        q = _divides(b, t)
        if q is not None:
            exact[q] = exact.get(q, 0) + k
        else:
            rest[t] = k
    r = _make_add(c, rest)
    if r.vmin >= 0 and prove_lt(r, b):
        qr = ZERO
    else:
        lo, hi = (0, INF) if (r.vmin >= 0 and b.vmin > 0) else (-INF, INF)
        if r.vmin >= 0 and b.vmin > 0 and r.vmax != INF:
            hi = r.vmax // b.vmin
        qr = _new("div", (r, b), lo, hi, f"({r.key} // {b.key})")
    return add(_make_add(0, exact), qr)


def mod(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if b.is_const:
        d = b.value
        if d == 0:
            raise ZeroDivisionError(f"symbolic modulo of {a} by zero")
        if a.is_const:
            return const(a.value % d)
        if d == 1 or d == -1:
            return ZERO
        if d < 0:
            return mul(mod(mul(a, -1), -d), -1)
        if a.vmin >= 0 and a.vmax < d:
            return a
        c, terms = _linear(a)
        rest = {t: k for t, k in terms.items() if k % d != 0}
        r = _make_add(c % d, rest)
        g = math.gcd(d, c % d, *rest.values())
        if g > 1:
            return mul(mod(_make_add((c % d) // g, {t: k // g for t, k in rest.items()}), d // g), g)
        lo, hi = _floor_div_num(r.vmin, d), _floor_div_num(r.vmax, d)
        if lo == hi:
            return sub(r, int(lo) * d)
        if r.op == "mod" and r.args[1].is_const and r.args[1].value % d == 0:
            return mod(r.args[0], d)
        return _new("mod", (r, const(d)), 0, d - 1, f"({r.key} % {d})")
    if a is b:
        return ZERO
    sc = _scaled_monomial(b)
    if sc is not None and sc[0] > 0 and sc[1].vmin > 0:  # x % (c*m) == c*((x // c) % m) + x % c
        k, m = sc
        return add(mul(mod(floordiv(a, k), m), k), mod(a, k))
    c, terms = _linear(a)
    rest = {t: k for t, k in terms.items() if _divides(b, t) is None}
    r = _make_add(c, rest)
    if r.vmin >= 0 and prove_lt(r, b):
        return r
    hi = b.vmax - 1 if b.vmin > 0 else INF
    lo = 0 if b.vmin > 0 else -INF
    return _new("mod", (r, b), lo, hi, f"({r.key} % {b.key})")


# ------------------------------------------------------------------------------------------------
# min / max / comparisons / logic (booleans are the integers 0 and 1)

def minimum(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if a is b or prove_le(a, b):
        return a
    if prove_le(b, a):
        return b
    x, y = sorted((a, b), key=lambda e: e.key)
    return _new("min", (x, y), min(a.vmin, b.vmin), min(a.vmax, b.vmax), f"min({x.key}, {y.key})")


def maximum(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if a is b or prove_le(b, a):
        return a
    if prove_le(a, b):
        return b
    x, y = sorted((a, b), key=lambda e: e.key)
    return _new("max", (x, y), max(a.vmin, b.vmin), max(a.vmax, b.vmax), f"max({x.key}, {y.key})")


def lt(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    ca = _linear(a)[0]
    if ca:  # keep constants on the right: (i + 1 < 5) -> (i < 4)
        a, b = add(a, -ca), add(b, -ca)
    if prove_lt(a, b):
        return ONE
    if prove_le(b, a):
        return ZERO
    return _new("lt", (a, b), 0, 1, f"({a.key} < {b.key})")


def le(a: IntLike, b: IntLike) -> Expr:
    return lt(a, add(b, 1))


def ge(a: IntLike, b: IntLike) -> Expr:
    return lt(b, add(a, 1))


def gt(a: IntLike, b: IntLike) -> Expr:
    return lt(b, a)


def eq(a: IntLike, b: IntLike) -> Expr:
    return logical_and(le(a, b), ge(a, b))


def logical_and(a: IntLike, b: IntLike) -> Expr:
    a, b = sym(a), sym(b)
    if a.is_const:
        return b if a.value else ZERO
    if b.is_const:
        return a if b.value else ZERO
    if a is b:
        return a
    x, y = sorted((a, b), key=lambda e: e.key)
    return _new("and", (x, y), 0, 1, f"({x.key} && {y.key})")


def logical_not(a: IntLike) -> Expr:
    a = sym(a)
    if a.is_const:
        return ONE if a.value == 0 else ZERO
    if a.op == "lt":  # !(x < y)  ==  y < x + 1  for integers
        return lt(a.args[1], add(a.args[0], 1))
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
    """Replace variables by name, simultaneously, and re-canonicalise."""
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
            r = m.get(x.args[0], x)
        elif op == "add":
            r = const(x.args[0])
            for t, k in x.args[1]:
                r = add(r, mul(go(t), k))
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
    plain ``/`` and ``%`` where both operands are provably non-negative.
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
            if a.vmin >= 0 and b.vmin > 0:
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
    if isinstance(j, int):
        return const(j)
    op = j[0]
    if op == "var":
        return var(j[1], j[2], from_json(j[3]) if j[3] is not None else None)
    if op == "add":
        out = const(j[1])
        for t, k in j[2]:
            out = add(out, mul(from_json(t), k))
        return out
    if op == "mul":
        return prod(from_json(a) for a in j[1:])
    return _BUILD[op](*(from_json(a) for a in j[1:]))


def shape_str(shape: Iterable[IntLike]) -> str:
    shape = tuple(shape)
    return "(" + ", ".join(str(sym(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"
