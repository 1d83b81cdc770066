"""Rewrite rules, as data. Each rule is a name, its algebra and whether it is exact. The algebra is the
rule itself: equations over tensor terms that algebra.py reads and turns into egglog commands (over
the `H` sort of terms.py), e.g. ``(x * a) * b = x * (a * b)`` or ``max(x * a) = max(x) * a  if a > 0``.
Where the right-hand side needs new index arithmetic (splitting a reduction) a rule has instead a
Python *expander* that proposes an equal subgraph for the nodes it matches; its algebra is then
documentation.

Exactness: rules marked `exact=False` hold in real arithmetic but may round differently in floating
point (reassociation, folding constants, hoisting a scale out of a sum); every candidate they produce
is still verified against the reference (search/oracle.py's tolerances) before it can win.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .algebra import compile_rule


@dataclass(frozen=True)
class Rule:
    name: str
    algebra: str
    egglog: Callable | None = None  # (H, reduced) -> [egglog command]; compiled from `algebra` if omitted
    expand: Callable | None = None  # (outputs, split policy or None) -> [(node, equal node)]
    exact: bool = True

    def __post_init__(self):
        if self.egglog is None and self.expand is None:
            object.__setattr__(self, "egglog", compile_rule(self.algebra))


# -- expanders --------------------------------------------------------------------------------------

def _split_reductions(outputs, policy=None):
    """sum_n x  ==  sum_f (sum_{n/f} x.reshape(f, n/f)): a long reduction becomes a parallel
    partial reduction plus a short final one (split-K). One implementation: kernel/split.py, with
    the thresholds of the Target's SplitPolicy (the H100's when none is given)."""
    from ..kernel.split import search_splits
    return search_splits(outputs, policy)


# -- the rules --------------------------------------------------------------------------------------
# names: a, b are scalar constants; op is a reduction's operator; every other name is a tensor term

RULES = [
    Rule("add-commute", "x + y = y + x"),
    Rule("mul-commute", "x * y = y * x"),
    Rule("add-assoc", "(x + y) + z = x + (y + z)", exact=False),
    Rule("mul-assoc", "(x * y) * z = x * (y * z)", exact=False),
    Rule("mul-one", "x * 1 = x"),
    Rule("add-zero", "x + 0 = x"),
    Rule("fold-mul", "(x * a) * b = x * (a * b)", exact=False),
    Rule("fold-add", "(x + a) + b = x + (a + b)", exact=False),
    Rule("log2-exp2", "log2(exp2(x)) = x", exact=False),
    Rule("recip-recip", "recip(recip(x)) = x", exact=False),
    Rule("recip-product", "recip(x) * recip(y) = recip(x * y)", exact=False),
    Rule("where-same", "where(c, x, x) = x"),
    Rule("exp2-product", "exp2(x) * exp2(y) = exp2(x + y)", exact=False),
    Rule("factor", "x * z + y * z = (x + y) * z", exact=False),
    # one multiply per output instead of per input element
    Rule("sum-scale", "sum(x * a) = sum(x) * a", exact=False),
    Rule("max-shift", "max(x + a) = max(x) + a"),
    Rule("max-scale", "max(x * a) = max(x) * a  if a > 0"),
    Rule("sum-linear", "sum(x + y) = sum(x) + sum(y)", exact=False),
    # kernel boundaries are searched like any other rewrite: mat(r) is r stored as its own kernel's output
    Rule("materialise-reduction", "reduce(op, x) = mat(reduce(op, x))"),
    Rule("materialise-exp2", "exp2(x) = mat(exp2(x))"),  # an expensive map stored, not recomputed
    Rule("split-reduction", "sum_n x = sum_f sum_{n/f} reshape(x, f, n/f)  (long, few outputs)",
         expand=_split_reductions, exact=False),
]

BY_NAME = {r.name: r for r in RULES}
