"""Rewrite rules written as algebra, and the one function that turns them into egglog commands.

A rule is text: one or more equations ``lhs = rhs`` separated by ``;``, each with an optional
condition after ``if``::

    (x * a) * b = x * (a * b)
    max(x * a) = max(x) * a  if a > 0
    reduce(op, x) = mat(reduce(op, x))

Names: ``a`` and ``b`` are scalar constants (a number broadcast to a tensor: `scalar(value, shape,
dtype)` in the e-graph), ``op`` is a reduction's operator, every other name is a tensor term.
Numbers are scalar constants too; arithmetic between scalars is folded by egglog (``a * b``).
Functions: the unary primitives (``exp2 log2 sin sqrt recip``), ``where(c, x, y)``, the reductions
``sum(x)`` / ``max(x)`` / ``reduce(op, x)`` (over one set of axes per rule) and ``mat(x)`` (x
materialised as its own kernel's output).

A scalar outside every reduction of a rule whose left side reduces has the *reduced* shape (``sum(x
* a) = sum(x) * a``: the right side's ``a`` is broadcast to the sum's shape): such a rule becomes an
egglog ``rule`` that looks the shape up in the ``reduced(shape, axes)`` table; every other equation
is a plain egglog ``rewrite``.
"""
from __future__ import annotations

import ast
from typing import Any, Callable

SCALARS = ("a", "b")
STRINGS = ("op",)
UNARY = ("exp2", "log2", "sin", "sqrt", "recip")
REDUCTIONS = ("sum", "max")


class RuleSyntaxError(ValueError):
    """A rule's text is not in the algebra this module reads."""


def _parse(text: str) -> list:
    """[(lhs, rhs, condition or None)] as Python ASTs."""
    out = []
    for part in text.split(";"):
        eq, _, cond = part.partition(" if ")
        lhs, sep, rhs = eq.partition(" = ")
        if not sep:
            raise RuleSyntaxError(f"rule {part.strip()!r}: expected 'lhs = rhs'")
        try:
            trees = [ast.parse(s.strip(), mode="eval").body for s in (lhs, rhs)]
            c = ast.parse(cond.strip(), mode="eval").body if cond.strip() else None
        except SyntaxError as e:
            raise RuleSyntaxError(f"rule {part.strip()!r}: {e.msg}") from None
        for t in (*trees, c):
            _check_names(t, part.strip())
        out.append((trees[0], trees[1], c))
    return out


TERMS = ("x", "y", "z", "c")
FUNCTIONS = (*UNARY, *REDUCTIONS, "reduce", "where", "mat")


def _check_names(t: ast.AST | None, rule: str) -> None:
    if t is None:
        return
    called = {id(n.func) for n in ast.walk(t) if isinstance(n, ast.Call)}
    for n in ast.walk(t):
        if isinstance(n, ast.Name):
            known = FUNCTIONS if id(n) in called else (*TERMS, *SCALARS, *STRINGS)
            if n.id not in known:
                raise RuleSyntaxError(f"rule {rule!r}: unknown {'function' if id(n) in called else 'name'} {n.id!r}")


def _reduces(t: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in (*REDUCTIONS, "reduce")
               for n in ast.walk(t))


class _Builder:
    """Evaluates one equation's ASTs to egglog expressions. Values are tagged: ("H", term) for a
    tensor term, ("f", f64) for a scalar constant, ("s", String) for an operator name."""

    def __init__(self, H: Any, v: dict, reduced_side: bool):
        self.H, self.v, self.reduced_side = H, v, reduced_side
        self.uses_reduced_shape = False

    def term(self, t: ast.AST, depth: int) -> Any:
        kind, val = self.ev(t, depth)
        if kind == "f":
            return self.H.scalar(val, self.shape(depth), self.v["d"])
        if kind != "H":
            raise RuleSyntaxError(f"{ast.unparse(t)!r} is not a tensor term")
        return val

    def shape(self, depth: int) -> Any:
        if depth == 0 and self.reduced_side:
            self.uses_reduced_shape = True
            return self.v["s2"]
        return self.v["s"]

    def ev(self, t: ast.AST, depth: int) -> tuple:
        H, v = self.H, self.v
        if isinstance(t, ast.Name):
            kind = "f" if t.id in SCALARS else "s" if t.id in STRINGS else "H"
            if t.id not in v:
                raise RuleSyntaxError(f"unknown name {t.id!r}")
            return kind, v[t.id]
        if isinstance(t, ast.Constant) and isinstance(t.value, (int, float)):
            return "f", float(t.value)
        if isinstance(t, ast.BinOp) and isinstance(t.op, (ast.Add, ast.Mult)):
            (lk, lv), (rk, rv) = self.ev(t.left, depth), self.ev(t.right, depth)
            if lk == rk == "f":
                return "f", (lv + rv if isinstance(t.op, ast.Add) else lv * rv)
            op = "add" if isinstance(t.op, ast.Add) else "mul"
            return "H", H.binary(op, self.term(t.left, depth), self.term(t.right, depth))
        if isinstance(t, ast.Call) and isinstance(t.func, ast.Name):
            f, args = t.func.id, t.args
            if f in UNARY and len(args) == 1:
                return "H", H.unary(f, self.term(args[0], depth))
            if f == "where" and len(args) == 3:
                return "H", H.where(*(self.term(a, depth) for a in args))
            if f in REDUCTIONS and len(args) == 1:
                return "H", H.reduce(f, v["ax"], self.term(args[0], depth + 1))
            if f == "reduce" and len(args) == 2:
                kind, op = self.ev(args[0], depth)
                if kind != "s":
                    raise RuleSyntaxError(f"reduce's first argument must be an operator name: {ast.unparse(args[0])!r}")
                return "H", H.reduce(op, v["ax"], self.term(args[1], depth + 1))
            if f == "mat" and len(args) == 1:
                return "H", H.mat(self.term(args[0], depth))
        raise RuleSyntaxError(f"cannot read {ast.unparse(t)!r}")

    def condition(self, t: ast.AST) -> Any:
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Gt, ast.Lt)):
            (lk, lv), (rk, rv) = self.ev(t.left, 1), self.ev(t.comparators[0], 1)
            if lk == rk == "f":
                return lv > rv if isinstance(t.ops[0], ast.Gt) else lv < rv
        raise RuleSyntaxError(f"cannot read condition {ast.unparse(t)!r} (scalar > or < only)")


def _variables(H: Any) -> dict:
    from egglog import String, f64, i64, var
    v = {n: var(n, H) for n in (*TERMS, "e")}
    v.update({n: var(n, f64) for n in SCALARS})
    v.update({n: var(n, i64) for n in ("s", "s2", "ax")})
    v.update({"d": var("d", String), "op": var("op", String)})
    return v


def compile_rule(text: str) -> Callable[[Any, Any], list]:
    """The egglog commands of a rule, as a function of the e-graph's sort H and its table
    function ``reduced`` (both from search/terms.py). The text is parsed now, so a malformed rule
    fails when the rule table is built, not when a search runs."""
    equations = _parse(text)

    def build(H: Any, reduced: Any) -> list:
        from egglog import eq, rewrite, rule, union
        v = _variables(H)
        cmds = []
        for lhs, rhs, cond in equations:
            b = _Builder(H, v, _reduces(lhs))
            left, right = b.term(lhs, 0), b.term(rhs, 0)
            conds = [b.condition(cond)] if cond is not None else []
            if b.uses_reduced_shape:  # a scalar broadcast to the reduction's result: look its shape up
                facts = [eq(v["e"]).to(left), eq(v["s2"]).to(reduced(v["s"], v["ax"])), *conds]
                cmds.append(rule(*facts).then(union(v["e"]).with_(right)))
            else:
                cmds.append(rewrite(left).to(right, *conds))
        return cmds

    return build
