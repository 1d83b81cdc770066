"""The rewrite driver: rule tables of ``(pattern, rewrite)`` rows, matched in order.

A smart constructor (``floordiv(a, b)``, ``minimum(a, b)``...) hands its canonical arguments to
`rewrite` with its table; the first row whose pattern matches and whose rewrite does not decline
(returns ``None``) gives the result. Every table ends with a row that always answers (usually: build
the node), so the driver never falls through. Patterns read like the algebra they match::

    x, b, e = Pat.var("x"), Pat.var("b"), Pat.var("e")
    d = Pat.cvar("d")                                   # a constant, bound as its int value
    ((x // e) // d, lambda x, e, d: floordiv(x, e * d) if e.vmin >= 1 else None)

Named variables bind expressions and must bind the same one wherever the name repeats (``x // x``);
a literal int matches that constant. The rewrite receives the bindings as keyword arguments.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from .expr import Expr

Env = dict


class Pat:
    """A pattern over canonical expressions (see the module docstring)."""

    __slots__ = ("op", "srcs", "name", "value")

    def __init__(self, op: Optional[str], srcs: tuple = (), name: Optional[str] = None, value: Optional[int] = None):
        self.op, self.srcs, self.name, self.value = op, srcs, name, value

    @staticmethod
    def var(name: str) -> "Pat":
        """Any expression, bound to `name`."""
        return Pat(None, name=name)

    @staticmethod
    def cvar(name: str) -> "Pat":
        """A constant, its integer value bound to `name`."""
        return Pat("const", name=name)

    @staticmethod
    def lit(v: int) -> "Pat":
        return Pat("const", value=v)

    def match(self, e: Expr, env: Env) -> bool:
        op = self.op
        if op is None or (op == "const" and self.name is not None):
            if op == "const":
                if e.op != "const":
                    return False
                got: Any = e.args[0]
            else:
                got = e
            prev = env.get(self.name, _UNBOUND)
            if prev is _UNBOUND:
                env[self.name] = got
                return True
            return prev is got or (op == "const" and prev == got)
        if e.op != op:
            return False
        if op == "const":
            return bool(e.args[0] == self.value)
        return _match_all(self.srcs, e.args, env)

    # ---- building patterns with the operators they match
    def _node(self, op: str, *others: Any) -> "Pat":
        return Pat(op, (self,) + tuple(o if isinstance(o, Pat) else Pat.lit(o) for o in others))

    def __floordiv__(self, o: Any) -> "Pat":
        return self._node("div", o)

    def __mod__(self, o: Any) -> "Pat":
        return self._node("mod", o)

    def __lt__(self, o: Any) -> "Pat":  # type: ignore[override]
        return self._node("lt", o)

    def __invert__(self) -> "Pat":  # ~p: logical not
        return Pat("not", (self,))

    def __repr__(self) -> str:
        if self.op is None:
            return str(self.name)
        if self.op == "const":
            return str(self.name if self.name is not None else self.value)
        if self.op == "not":
            return f"!{self.srcs[0]}"
        sym = {"div": "//", "mod": "%", "lt": "<"}.get(self.op)
        if sym is not None:
            return f"({self.srcs[0]} {sym} {self.srcs[1]})"
        return f"{self.op}(" + ", ".join(map(repr, self.srcs)) + ")"


def pmin(a: Pat, b: Pat) -> Pat:
    return a._node("min", b)


def pmax(a: Pat, b: Pat) -> Pat:
    return a._node("max", b)


_UNBOUND = object()


def _match_all(pats: Sequence[Pat], args: Sequence[Expr], env: Env) -> bool:
    for p, a in zip(pats, args):
        if not p.match(a, env):
            return False
    return True


Rewrite = Callable[..., Optional[Expr]]


class Rules:
    """An ordered table of ``(pattern, rewrite)`` rows for one node kind."""

    __slots__ = ("name", "rows")

    def __init__(self, name: str, rows: Sequence[tuple[Pat, Rewrite]]):
        self.name = name
        self.rows = tuple((p.srcs, fn) for p, fn in rows)

    def __repr__(self) -> str:
        return f"Rules({self.name}: {len(self.rows)} rows)"


def rewrite(rules: Rules, *args: Expr) -> Expr:
    """The first answer of `rules` for a node with these (canonical) arguments."""
    for srcs, fn in rules.rows:
        env: Env = {}
        if _match_all(srcs, args, env):
            r = fn(**env)
            if r is not None:
                return r
    raise AssertionError(f"{rules.name}: no row answered for {args}")  # pragma: no cover
