"""Guarded sums (an embedding's gradient): a reduction whose terms are `where(cond, x, 0)` with
`cond` blind to some of the outputs. The one-hot contraction `dW[v, c] = sum_i (ids[i] == v ?
g[i, c] : 0)` that autograd makes of a gather is one. Renderers that know the form (codegen/c_guarded.py,
codegen/cuda_guarded.py) test `cond` once per (guard point, term) and add x's row where it holds,
instead of once per output and term."""
from __future__ import annotations

from .. import symbolic as sm
from . import ir
from .structure import Canon, _val_vars as _vars

MAX_ROW = 16384  # accumulators per thread (the other outputs' count)


def guarded_form(c: Canon | None):
    """(cond, x, guard vars, row vars) when the kernel has the form, else None."""
    if c is None or len(c.stages) != 1 or c.inner or len(c.outer) < 2:
        return None
    st = c.stages[0]
    v = st.update.value
    if st.acc.op != "sum" or v.op != "where" or not st.acc.dtype.is_float:
        return None
    cond, x, zero = v.args
    if zero.op != "const" or zero.args[0] != 0 or cond.dtype.name != "bool":
        return None
    # the condition reads integers (ids compared with an output's index: a one-hot); masks computed
    # from indices alone (causal) or read as booleans keep the other forms
    if not any(x.op == "load" and not isinstance(x.args[1], ir.Val) and x.dtype.is_int for x in ir.val_toposort([cond])):
        return None
    cv = _vars(cond)
    guard = [(o, e) for o, e in c.outer if o in cv]
    rows = [(o, e) for o, e in c.outer if o not in cv]
    red = {o for o, _ in st.loops}
    if not guard or not rows or not (cv & red) or not (_vars(x) & red):
        return None
    n = sm.prod(e for _, e in rows)
    if not n.is_const or n.value > MAX_ROW or not all(e.is_const for _, e in guard):
        return None
    return cond, x, guard, rows


def applicable(c: Canon | None) -> bool:
    return guarded_form(c) is not None
