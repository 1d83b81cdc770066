"""One tree walker: `fold` visits an expression DAG once per distinct node, children on demand, with
a visitor per node kind. Substitution, free variables, evaluation, C rendering and the JSON form are
each a visitor table over it."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, TypeVar

import numpy as np

from . import division as dv
from . import logic as lg
from .arith import ONE, mul, sum_of
from .expr import Expr, IntLike, sym, var

T = TypeVar("T")
Go = Callable[[Expr], Any]
Visitor = Mapping[str, Callable[[Expr, Go], Any]]

_MISSING = object()


def fold(e: Expr, visit: Visitor) -> Any:
    """visit[x.op](x, go) for the root, where go(child) folds a child (memoized: a shared
    sub-expression is visited once)."""
    memo: dict = {}

    def go(x: Expr) -> Any:
        r = memo.get(x, _MISSING)
        if r is _MISSING:
            r = memo[x] = visit[x.op](x, go)
        return r

    return go(e)


def children(x: Expr) -> tuple:
    """The sub-expressions of x (a sum's terms; a variable's symbolic bound is not a child)."""
    if x.op == "add":
        return tuple(t for t, _ in x.args[1])
    if x.op in ("const", "var"):
        return ()
    return x.args


# rebuilding a node from new arguments, through the constructors (so the result is canonical)
BUILD: dict = {
    "div": dv.floordiv,
    "mod": dv.mod,
    "min": lg.minimum,
    "max": lg.maximum,
    "lt": lg.lt,
    "and": lg.logical_and,
    "not": lg.logical_not,
}


def _rebuild(x: Expr, go: Go) -> Expr:
    return BUILD[x.op](*(go(a) for a in x.args))


def _product(x: Expr, go: Go) -> Expr:
    r = ONE
    for f in x.args:
        r = mul(r, go(f))
    return r


def substitute(e: IntLike, mapping: Mapping[str, IntLike]) -> Expr:
    """Replace variables by name, simultaneously, and re-canonicalise. A variable whose symbolic
    bound mentions a replaced name gets the substituted bound (``i`` in ``[0, S-1]`` with ``S = 4``
    becomes ``i`` in ``[0, 3]``)."""
    e = sym(e)
    m = {k: sym(v) for k, v in mapping.items()}
    if not m:
        return e

    def leaf(x: Expr, go: Go) -> Expr:
        name, lo, hi = x.args
        if name in m:
            return m[name]
        return var(name, lo, go(hi)) if isinstance(hi, Expr) else x

    visit = dict.fromkeys(BUILD, _rebuild)
    visit.update({
        "const": lambda x, go: x,
        "var": leaf,
        "add": lambda x, go: sum_of([x.args[0]] + [mul(go(t), k) for t, k in x.args[1]]),
        "mul": _product,
    })
    return fold(e, visit)


def free_vars(e: IntLike) -> set:
    out: set = set()

    def inner(x: Expr, go: Go) -> None:
        for a in children(x):
            go(a)

    visit: dict = {op: inner for op in ("add", "mul", *BUILD)}
    visit["const"] = lambda x, go: None
    visit["var"] = lambda x, go: out.add(x.args[0])
    fold(sym(e), visit)
    return out


def _int(r: Any) -> Any:
    """Booleans as 0/1, numpy scalars as Python ints (floor semantics throughout)."""
    if isinstance(r, (np.bool_, bool)):
        return int(r)
    if isinstance(r, np.ndarray) and r.dtype == np.bool_:
        return r.astype(np.int64)
    if isinstance(r, np.integer):
        return int(r)
    return r


def _eval_add(x: Expr, go: Go) -> Any:
    r = x.args[0]
    for t, k in x.args[1]:
        r = r + go(t) * k
    return r


def _eval_mul(x: Expr, go: Go) -> Any:
    r = 1
    for f in x.args:
        r = r * go(f)
    return r


_EVAL: dict = {
    "const": lambda x, go, env: x.args[0],
    "add": lambda x, go, env: _eval_add(x, go),
    "mul": lambda x, go, env: _eval_mul(x, go),
    "div": lambda x, go, env: go(x.args[0]) // go(x.args[1]),
    "mod": lambda x, go, env: go(x.args[0]) % go(x.args[1]),
    "min": lambda x, go, env: np.minimum(go(x.args[0]), go(x.args[1])),
    "max": lambda x, go, env: np.maximum(go(x.args[0]), go(x.args[1])),
    "lt": lambda x, go, env: go(x.args[0]) < go(x.args[1]),
    "and": lambda x, go, env: np.logical_and(go(x.args[0]), go(x.args[1])),
    "not": lambda x, go, env: np.logical_not(go(x.args[0])),
}


def _eval_var(x: Expr, env: Mapping[str, Any]) -> Any:
    name = x.args[0]
    if name not in env:
        raise KeyError(f"no value bound for symbolic dimension or index {name!r}")
    return env[name]


def evaluate(e: IntLike, env: Optional[Mapping[str, Any]] = None) -> Any:
    """Evaluate with Python ints or numpy integer arrays bound to the variables (floor semantics)."""
    bound = env or {}
    visit = {op: (lambda f: lambda x, go: _int(f(x, go, bound)))(f) for op, f in _EVAL.items()}
    visit["var"] = lambda x, go: _int(_eval_var(x, bound))
    return fold(sym(e), visit)
