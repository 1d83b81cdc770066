"""Symbolic integers: shapes, named dimensions, loop indices and index arithmetic.

An `Expr` is an immutable, hash-consed integer expression: two expressions built the same way are the
same object, so ``is`` is equality of canonical forms. Construction always goes through the smart
constructors, which keep every expression in a canonical form:

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
while named dims stay themselves; proofs (`prove_le`, `prove_lt`) and the div/mod folds use them
when numeric bounds are not enough.

Division and modulo are *floor* division and *floor* modulo, as in Python. `render_c` emits plain C
``/`` and ``%`` only where both operands are provably non-negative, and floor helpers otherwise.
Booleans are the integers 0 and 1; ``and``/``not`` always produce 0 or 1.

Modules, by concept:

* `expr`: the node, hash-consing, leaves (`const`, `var`, `dim`, `index_var`), canonical order;
* `rewrite`: the one rewrite driver and its ``(pattern, rewrite)`` tables (`Pat`, `Rules`);
* `arith`: canonical sums and products, and the floor-identity recombination inside sums;
* `division`: floor division and modulo, their folds as rule tables;
* `logic`: min / max (rule tables), comparisons, conjunction, negation;
* `bounds`: symbolic bounds and proofs;
* `walk`: one tree walker (`fold`) and the visitors for substitution, free variables, evaluation;
* `assume`: simplification where a guard holds (bounds it puts on single variables);
* `render`: C source, JSON form, shapes as text.
"""
from .expr import INF, ONE, ZERO, Expr, IntLike, const, dim, index_var, sym, var  # noqa: I001
from .arith import add, mul, prod, sub, sum_of
from .division import floordiv, mod
from .logic import all_of, eq, ge, gt, le, logical_and, logical_not, lt, maximum, minimum
from .bounds import lower_bound, prove_le, prove_lt, upper_bound
from .walk import evaluate, fold, free_vars, step, substitute
from .assume import assume
from .render import C_HELPERS, from_json, render_c, shape_str, to_json

__all__ = [
    "INF", "ONE", "ZERO", "Expr", "IntLike", "const", "dim", "index_var", "sym", "var",
    "add", "mul", "prod", "sub", "sum_of", "floordiv", "mod",
    "all_of", "eq", "ge", "gt", "le", "logical_and", "logical_not", "lt", "maximum", "minimum",
    "lower_bound", "prove_le", "prove_lt", "upper_bound",
    "evaluate", "fold", "free_vars", "step", "substitute", "assume",
    "C_HELPERS", "from_json", "render_c", "shape_str", "to_json",
]
