"""Expression nodes: the immutable, hash-consed `Expr`, its leaves (constants, variables, dims, loop
indices) and the canonical order of terms. Two expressions built the same way are the same object,
so ``is`` is equality of canonical forms. Arithmetic on `Expr` goes through the smart constructors
of the sibling modules, which keep every result canonical."""
from __future__ import annotations

import math
import weakref
from typing import Iterable, Optional, Union

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
    _lb: Optional["Expr"]
    _ub: Optional["Expr"]
    _fk: Optional[str]

    # ---- arithmetic sugar (all results are canonical) ----
    def __add__(self, o: IntLike) -> "Expr":
        return _ar.add(self, o)

    def __radd__(self, o: IntLike) -> "Expr":
        return _ar.add(o, self)

    def __sub__(self, o: IntLike) -> "Expr":
        return _ar.add(self, -o if isinstance(o, int) else _ar.mul(o, -1))

    def __rsub__(self, o: IntLike) -> "Expr":
        return _ar.add(o, _ar.mul(self, -1))

    def __mul__(self, o: IntLike) -> "Expr":
        return _ar.mul(self, o)

    def __rmul__(self, o: IntLike) -> "Expr":
        return _ar.mul(o, self)

    def __neg__(self) -> "Expr":
        return _ar.mul(self, -1)

    def __floordiv__(self, o: IntLike) -> "Expr":
        return _dv.floordiv(self, o)

    def __rfloordiv__(self, o: IntLike) -> "Expr":
        return _dv.floordiv(o, self)

    def __mod__(self, o: IntLike) -> "Expr":
        return _dv.mod(self, o)

    def __rmod__(self, o: IntLike) -> "Expr":
        return _dv.mod(o, self)

    # ---- queries ----
    @property
    def is_const(self) -> bool:
        return self.op == "const"

    @property
    def value(self) -> int:
        if self.op != "const":
            raise ValueError(f"symbolic expression {self} has no constant value")
        v: int = self.args[0]
        return v

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __bool__(self) -> bool:
        raise TypeError(f"the truth value of symbolic expression {self} is undefined; use ember.symbolic.lt/eq")

    def __repr__(self) -> str:
        return self.key

    def __reduce__(self):  # pickling rebuilds through the constructors (keeps interning intact)
        return (_rd.from_json, (_rd.to_json(self),))


def _new(op: str, args: tuple, vmin: float, vmax: float, key: str) -> Expr:
    if vmin == vmax and op not in ("const", "var"):  # a proven single value is that constant: one
        return const(int(vmin))  # form per value (min(0, 0 % -N) is min(0, 0))
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


# the constructors that Expr's operators call (imported last: they build on the names above)
from . import arith as _ar  # noqa: E402
from . import division as _dv  # noqa: E402
from . import render as _rd  # noqa: E402
