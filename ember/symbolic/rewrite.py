"""The rewrite driver: rule tables of ``(pattern, rewrite)`` rows, matched in order.

A smart constructor (``floordiv(a, b)``, ``minimum(a, b)``...) hands its canonical arguments to
`rewrite` with its table; the first row whose pattern matches and whose rewrite does not decline
(returns ``None``) gives the result. Every table ends with a row that always answers (usually: build
the node), so the driver never falls through. Each row's pattern is compiled once into a small
Python matcher (as tinygrad compiles its UPats), so a table costs about what the if-chain it
replaced did. Patterns read like the algebra they match::

    x, b, e = Pat.var("x"), Pat.var("b"), Pat.var("e")
    d = Pat.cvar("d")                                   # a constant, bound as its int value
    ((x // e) // d, lambda x, e, d: floordiv(x, e * d) if e.vmin >= 1 else None)

Named variables bind expressions and must bind the same one wherever the name repeats (``x // x``);
a literal int matches that constant. The rewrite receives the bindings positionally, in the order
the names first appear in the pattern (checked when the table is built).
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from .expr import Expr


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

    # ---- building patterns with the operators they match
    def _node(self, op: str, *others: Any) -> "Pat":
        return Pat(op, (self,) + tuple(o if isinstance(o, Pat) else Pat.lit(o) for o in others))

    def __floordiv__(self, o: Any) -> "Pat":
        return self._node("div", o)

    def __mod__(self, o: Any) -> "Pat":
        return self._node("mod", o)

    def __lt__(self, o: Any) -> "Pat":
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


Rewrite = Callable[..., Optional[Expr]]
Matcher = Callable[..., Optional[tuple]]


def compile_match(srcs: Sequence[Pat]) -> tuple[Matcher, list]:
    """A Python function that matches `srcs` against a node's arguments and returns the bound values
    (in the order their names first appear) or None, and those names. Patterns are compiled once,
    when a table is built, because the constructors run them on every node they make."""
    checks: list = []
    names: list = []
    where: dict = {}

    def walk(p: Pat, at: str) -> None:
        if p.op is None or (p.op == "const" and p.name is not None):
            if p.op == "const":
                checks.append(f"{at}.op != 'const'")
                at = f"{at}.args[0]"
            if p.name in where:
                checks.append(f"{at} != {where[p.name]}" if p.op == "const" else f"{at} is not {where[p.name]}")
            else:
                where[p.name] = at
                names.append(p.name)
            return
        checks.append(f"{at}.op != {p.op!r}")
        if p.op == "const":
            checks.append(f"{at}.args[0] != {p.value!r}")
            return
        for k, q in enumerate(p.srcs):
            walk(q, f"{at}.args[{k}]")

    for k, q in enumerate(srcs):
        walk(q, f"a{k}")
    params = ", ".join(f"a{k}" for k in range(len(srcs)))
    body = "".join(f"    if {c}: return None\n" for c in checks)
    out = ", ".join(where[n] for n in names)
    src = f"def match({params}):\n{body}    return ({out}{',' if len(names) == 1 else ''})\n"
    ns: dict = {}
    exec(src, ns)  # noqa: S102 -- source built above from the pattern only
    return ns["match"], names


class Rules:
    """An ordered table of ``(pattern, rewrite)`` rows for one node kind."""

    __slots__ = ("name", "rows", "patterns")

    def __init__(self, name: str, rows: Sequence[tuple[Pat, Rewrite]]):
        self.name = name
        self.patterns = tuple(p for p, _ in rows)
        compiled = []
        for p, fn in rows:
            match, names = compile_match(p.srcs)
            code = fn.__code__
            params = list(code.co_varnames[:code.co_argcount])
            if params != names:  # the rewrite gets the bindings positionally: its parameters must say so
                raise ValueError(f"{name}: rewrite for {p} takes {params}, the pattern binds {names}")
            compiled.append((match, fn))
        self.rows = tuple(compiled)

    def __repr__(self) -> str:
        return f"Rules({self.name}: " + "; ".join(map(repr, self.patterns)) + ")"


def rewrite(rules: Rules, *args: Expr) -> Expr:
    """The first answer of `rules` for a node with these (canonical) arguments."""
    for match, fn in rules.rows:
        vals = match(*args)
        if vals is not None:
            r = fn(*vals)
            if r is not None:
                return r
    raise AssertionError(f"{rules.name}: no row answered for {args}")  # pragma: no cover
