"""Rewrite rules, as data. Each rule is a name, the algebra it states, and either egglog rewrites
(over the `H` sort of egraph.py) or a Python *expander* that proposes an equal subgraph for nodes it
matches (used where the right-hand side needs new index arithmetic, e.g. splitting a reduction).

Exactness: rules marked `exact=False` hold in real arithmetic but may round differently in floating
point (reassociation, folding constants, hoisting a scale out of a sum); every candidate they produce
is still verified against the reference at DESIGN.md's tolerances before it can win.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable



@dataclass(frozen=True)
class Rule:
    name: str
    algebra: str
    egglog: Callable | None = None  # (H, reduced) -> [egglog command]
    expand: Callable | None = None  # outputs -> [(node, equal node)]
    exact: bool = True


def _v():
    from egglog import f64, i64, var, vars_
    H, _ = __import__("ember.search.egraph", fromlist=["egglog_sort"]).egglog_sort()
    x, y, z, c, e = vars_("x y z c e", H)
    a, b = vars_("a b", f64)
    s, s2, ax = vars_("s s2 ax", i64)
    from egglog import String
    d, op = var("d", String), var("op", String)
    return x, y, z, c, e, a, b, s, s2, ax, d, op


def _rw(fn):
    """A rule body: fn(H, reduced, vars) -> list of egglog commands."""
    def build(H, reduced):
        return fn(H, reduced, *_v())
    return build


def _simple(lhs_rhs):
    def fn(H, reduced, x, y, z, c, e, a, b, s, s2, ax, d, op):
        from egglog import rewrite
        return [rewrite(l).to(r, *cond) for l, r, *cond in lhs_rhs(H, x, y, z, c, a, b, s, d)]
    return _rw(fn)


def mul(H, p, q):
    return H.binary("mul", p, q)


def add(H, p, q):
    return H.binary("add", p, q)


# -- expanders --------------------------------------------------------------------------------------

def _split_reductions(outputs):
    """sum_n x  ==  sum_f (sum_{n/f} x.reshape(f, n/f)): a long reduction becomes a parallel
    partial reduction plus a short final one (split-K). One implementation: kernel/split.py."""
    from ..kernel.split import search_splits
    return search_splits(outputs)


# -- the rules --------------------------------------------------------------------------------------

RULES = [
    Rule("add-commute", "a + b = b + a", _simple(lambda H, x, y, z, c, a, b, s, d: [(add(H, x, y), add(H, y, x))])),
    Rule("mul-commute", "a * b = b * a", _simple(lambda H, x, y, z, c, a, b, s, d: [(mul(H, x, y), mul(H, y, x))])),
    Rule("add-assoc", "(a + b) + c = a + (b + c)",
         _simple(lambda H, x, y, z, c, a, b, s, d: [(add(H, add(H, x, y), z), add(H, x, add(H, y, z)))]), exact=False),
    Rule("mul-assoc", "(a * b) * c = a * (b * c)",
         _simple(lambda H, x, y, z, c, a, b, s, d: [(mul(H, mul(H, x, y), z), mul(H, x, mul(H, y, z)))]), exact=False),
    Rule("mul-one", "x * 1 = x", _simple(lambda H, x, y, z, c, a, b, s, d: [(mul(H, x, H.scalar(1.0, s, d)), x)])),
    Rule("add-zero", "x + 0 = x", _simple(lambda H, x, y, z, c, a, b, s, d: [(add(H, x, H.scalar(0.0, s, d)), x)])),
    Rule("fold-mul", "(x * a) * b = x * (a*b)",
         _simple(lambda H, x, y, z, c, a, b, s, d: [(mul(H, mul(H, x, H.scalar(a, s, d)), H.scalar(b, s, d)),
                                                      mul(H, x, H.scalar(a * b, s, d)))]), exact=False),
    Rule("fold-add", "(x + a) + b = x + (a+b)",
         _simple(lambda H, x, y, z, c, a, b, s, d: [(add(H, add(H, x, H.scalar(a, s, d)), H.scalar(b, s, d)),
                                                      add(H, x, H.scalar(a + b, s, d)))]), exact=False),
    Rule("log2-exp2", "log2(exp2(x)) = x",
         _simple(lambda H, x, y, z, c, a, b, s, d: [(H.unary("log2", H.unary("exp2", x)), x)]), exact=False),
    Rule("recip-recip", "1/(1/x) = x",
         _simple(lambda H, x, y, z, c, a, b, s, d: [(H.unary("recip", H.unary("recip", x)), x)]), exact=False),
    Rule("recip-product", "(1/x) * (1/y) = 1/(x*y)",
         _simple(lambda H, x, y, z, c, a, b, s, d: [(mul(H, H.unary("recip", x), H.unary("recip", y)),
                                                      H.unary("recip", mul(H, x, y)))]), exact=False),
    Rule("where-same", "where(c, x, x) = x", _simple(lambda H, x, y, z, c, a, b, s, d: [(H.where(c, x, x), x)])),
    Rule("exp2-product", "exp2(x) * exp2(y) = exp2(x + y)",
         _simple(lambda H, x, y, z, c, a, b, s, d: [(mul(H, H.unary("exp2", x), H.unary("exp2", y)),
                                                      H.unary("exp2", add(H, x, y)))]), exact=False),
    Rule("factor", "x*z + y*z = (x + y)*z",
         _simple(lambda H, x, y, z, c, a, b, s, d: [(add(H, mul(H, x, z), mul(H, y, z)), mul(H, add(H, x, y), z))]),
         exact=False),
]


def _reduce_rules(H, reduced, x, y, z, c, e, a, b, s, s2, ax, d, op):
    from egglog import eq, rule, union
    return [
        # sum(x * a) = sum(x) * a: one multiply per output instead of per input element
        rule(eq(e).to(H.reduce("sum", ax, mul(H, x, H.scalar(a, s, d)))), eq(s2).to(reduced(s, ax))).then(
            union(e).with_(mul(H, H.reduce("sum", ax, x), H.scalar(a, s2, d)))),
        # max(x + a) = max(x) + a
        rule(eq(e).to(H.reduce("max", ax, add(H, x, H.scalar(a, s, d)))), eq(s2).to(reduced(s, ax))).then(
            union(e).with_(add(H, H.reduce("max", ax, x), H.scalar(a, s2, d)))),
        # max(x * a) = max(x) * a for a > 0
        rule(eq(e).to(H.reduce("max", ax, mul(H, x, H.scalar(a, s, d)))), eq(s2).to(reduced(s, ax)), a > 0.0).then(
            union(e).with_(mul(H, H.reduce("max", ax, x), H.scalar(a, s2, d)))),
    ]


def _materialise(H, reduced, x, y, z, c, e, a, b, s, s2, ax, d, op):
    from egglog import rewrite
    return [
        rewrite(H.reduce(op, ax, x)).to(H.mat(H.reduce(op, ax, x))),  # a reduction as its own kernel
        rewrite(H.unary("exp2", x)).to(H.mat(H.unary("exp2", x))),  # an expensive map stored, not recomputed
    ]


def _linearity(H, reduced, x, y, z, c, e, a, b, s, s2, ax, d, op):
    from egglog import rewrite
    return [rewrite(H.reduce("sum", ax, add(H, x, y))).to(add(H, H.reduce("sum", ax, x), H.reduce("sum", ax, y)))]


RULES = RULES + [
    Rule("sum-scale", "sum(x * a) = sum(x) * a", _rw(lambda *v: _reduce_rules(*v)[0:1]), exact=False),
    Rule("max-shift", "max(x + a) = max(x) + a", _rw(lambda *v: _reduce_rules(*v)[1:2])),
    Rule("max-scale", "max(x * a) = max(x) * a  (a > 0)", _rw(lambda *v: _reduce_rules(*v)[2:3])),
    Rule("sum-linear", "sum(x + y) = sum(x) + sum(y)", _rw(_linearity), exact=False),
    Rule("materialise-reduction", "r = mat(r): a reduction gets its own kernel", _rw(lambda *v: _materialise(*v)[0:1])),
    Rule("materialise-exp2", "exp2(x) = mat(exp2(x)): stored instead of recomputed", _rw(lambda *v: _materialise(*v)[1:2])),
    Rule("split-reduction", "sum_n x = sum_f sum_{n/f} reshape(x, f, n/f)  (long, few outputs)",
         expand=_split_reductions, exact=False),
]

BY_NAME = {r.name: r for r in RULES}
