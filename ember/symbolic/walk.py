"""One tree walker: `fold` visits an expression DAG once per distinct node, children on demand, with
a visitor per node kind. Substitution, free variables, evaluation, C rendering and the JSON form are
each a visitor table over it."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import numpy as np

from . import division as dv
from . import logic as lg
from .arith import ONE, mul, sum_of
from .expr import Expr, IntLike, sym, var

Go = Callable[[Expr], Any]
Visitor = Mapping[str, Callable[[Expr, Go, Any], Any]]

def fold(e: Expr, visit: Visitor, ctx: Any = None) -> Any:
    """visit[x.op](x, go, ctx) for the root, where go(child) folds a child (memoized: a shared
    sub-expression is visited once). Visitor tables are plain dicts from node kind to function;
    `ctx` is whatever the walk carries (a substitution, an environment, a set to fill)."""
    memo: dict = {}

    def go(x: Expr) -> Any:
        if x in memo:
            return memo[x]
        r = memo[x] = visit[x.op](x, go, ctx)  # noqa: F821 - go is bound until the walk ends
        return r

    try:
        return go(e)
    finally:  # break the go <-> closure-cell cycle: the memo is freed now, not by a later cyclic GC pass
        del go


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


def _rebuild(x: Expr, go: Go, m: Any) -> Expr:
    return BUILD[x.op](*[go(a) for a in x.args])


def _product(x: Expr, go: Go, m: Any) -> Expr:
    r = ONE
    for f in x.args:
        r = mul(r, go(f))
    return r


def _subst_var(x: Expr, go: Go, m: Mapping[str, Expr]) -> Expr:
    name, lo, hi = x.args
    r = m.get(name)
    if r is not None:
        return r
    return var(name, lo, go(hi)) if isinstance(hi, Expr) else x


_SUBSTITUTE: dict = dict.fromkeys(BUILD, _rebuild)
_SUBSTITUTE.update({
    "const": lambda x, go, m: x,
    "var": _subst_var,
    "add": lambda x, go, m: sum_of([x.args[0]] + [mul(go(t), k) for t, k in x.args[1]]),
    "mul": _product,
})


def substitute(e: IntLike, mapping: Mapping[str, IntLike]) -> Expr:
    """Replace variables by name, simultaneously, and re-canonicalise. A variable whose symbolic
    bound mentions a replaced name gets the substituted bound (``i`` in ``[0, S-1]`` with ``S = 4``
    becomes ``i`` in ``[0, 3]``)."""
    e = sym(e)
    m = {k: sym(v) for k, v in mapping.items()}
    if not m:
        return e
    r: Expr = fold(e, _SUBSTITUTE, m)
    return r


def step(e: IntLike, name: str) -> Expr:
    """e(name + 1) - e(name): how far one step of loop variable `name` moves index e (a constant when
    e is affine in it). The variable is taken unbounded, so no bound simplifies the difference away."""
    x = var(name, 0, None)
    return substitute(e, {name: x + 1}) - substitute(e, {name: x})


def _visit_args(x: Expr, go: Go, out: set) -> None:
    for a in x.args:
        go(a)


def _visit_terms(x: Expr, go: Go, out: set) -> None:
    for t, _ in x.args[1]:
        go(t)


_FREE_VARS: dict = dict.fromkeys(("mul", *BUILD), _visit_args)
_FREE_VARS.update({"add": _visit_terms, "const": lambda x, go, out: None, "var": lambda x, go, out: out.add(x.args[0])})


def free_vars(e: IntLike) -> set:
    out: set = set()
    fold(sym(e), _FREE_VARS, out)
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


def _eval_add(x: Expr, go: Go, env: Any) -> Any:
    r = x.args[0]
    for t, k in x.args[1]:
        r = r + go(t) * k
    return _int(r)


def _eval_mul(x: Expr, go: Go, env: Any) -> Any:
    r = 1
    for f in x.args:
        r = r * go(f)
    return _int(r)


def _eval_var(x: Expr, go: Go, env: Mapping[str, Any]) -> Any:
    name = x.args[0]
    if name not in env:
        raise KeyError(f"no value bound for symbolic dimension or index {name!r}")
    return _int(env[name])


_EVALUATE: dict = {
    "const": lambda x, go, env: x.args[0],
    "var": _eval_var,
    "add": _eval_add,
    "mul": _eval_mul,
    "div": lambda x, go, env: _int(go(x.args[0]) // go(x.args[1])),
    "mod": lambda x, go, env: _int(go(x.args[0]) % go(x.args[1])),
    "min": lambda x, go, env: _int(np.minimum(go(x.args[0]), go(x.args[1]))),
    "max": lambda x, go, env: _int(np.maximum(go(x.args[0]), go(x.args[1]))),
    "lt": lambda x, go, env: _int(go(x.args[0]) < go(x.args[1])),
    "and": lambda x, go, env: _int(np.logical_and(go(x.args[0]), go(x.args[1]))),
    "not": lambda x, go, env: _int(np.logical_not(go(x.args[0]))),
}


def evaluate(e: IntLike, env: Optional[Mapping[str, Any]] = None) -> Any:
    """Evaluate with Python ints or numpy integer arrays bound to the variables (floor semantics)."""
    return fold(sym(e), _EVALUATE, env or {})
