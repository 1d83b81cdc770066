"""Prefix sums: a reduction `acc[.., l] = sum_r where(r <= l, x(r), 0)` whose bound `l` is an output
index running over the same extent as `r`, with `x` blind to `l`, is an inclusive scan of `x`
evaluated at `l`: out[l] = out[l - 1] + x(l). `cumsum` (ops/reduce.py) is built from such masked
sums over blocks of 32; a renderer that knows the form (codegen/cuda_scan.py: a warp's lanes are the
block's positions, a shuffle scan) does n work per block where the loops do n^2 and read every input
n times. The bound may be one output variable (`o2` of extent n) or that variable's residue in a
merged axis (`o1 % n`, the block index then `o1 // n`; the axis may end in a partial block): the matcher splits
each candidate output variable as `n * s + l` and asks the symbolic simplifier whether the bound
becomes `l` and `x` loses it."""
from __future__ import annotations

from dataclasses import dataclass

from .. import symbolic as sm
from . import ir
from .structure import Canon, _val_vars

MAX_LEN = 32  # positions a scan may have: a warp's lanes


@dataclass
class ScanForm:
    var: str  # the output variable the bound reads
    extent: sm.Expr  # its extent (its last block may be partial: a padded axis sliced back)
    n: int  # positions per scan (the reduce loop's extent)
    r: str  # the reduce variable
    x: ir.Val  # the summed term, a function of r and of the outputs other than the position
    acc: ir.Acc
    reverse: bool = False  # output position l holds the prefix up to n - 1 - l


def _is_const(v: ir.Val, value) -> bool:
    return v.op == "const" and v.args[0] == value


def _is_var(e: sm.Expr, name: str) -> bool:
    return e.op == "var" and e.args[0] == name


def _bound(cond: ir.Val, r: str):
    """The expression E when `cond` reads `r <= E` (as `not (E < r)` or `r < E + 1`), else None."""
    if cond.op == "where" and _is_const(cond.args[1], False) and _is_const(cond.args[2], True):
        a = cond.args[0]
        if a.op == "lt" and a.args[0].op == "index" and a.args[1].op == "index" \
                and _is_var(a.args[1].args[0], r):
            return a.args[0].args[0]
        return None
    if cond.op == "lt" and cond.args[0].op == "index" and cond.args[1].op == "index" \
            and _is_var(cond.args[0].args[0], r):
        return cond.args[1].args[0] - 1
    return None


def _split(e: sm.Expr, var: str, ext: int, n: int):
    """`e` with `var` = n * s + l (s < ext / n, l < n)."""
    s, l = sm.var("scan_s_", 0, ext // n - 1), sm.var("scan_l_", 0, n - 1)
    return sm.substitute(e, {var: s * n + l}), {var: s * n + l}


def scan_form(c: Canon | None) -> ScanForm | None:
    if c is None or len(c.stages) != 1 or c.inner:
        return None
    st = c.stages[0]
    if st.acc.op != "sum" or len(st.loops) != 1:
        return None
    r, n_e = st.loops[0]
    if not n_e.is_const or not 2 <= n_e.value <= MAX_LEN:
        return None
    n = n_e.value
    v = st.update.value
    if v.op != "where":
        return None
    cond, a, b = v.args
    if _is_const(b, 0) or _is_const(b, 0.0):
        x, bound = a, _bound(cond, r)
    elif (_is_const(a, 0) or _is_const(a, 0.0)) and cond.op == "lt" and cond.args[1].op == "index" \
            and _is_var(cond.args[1].args[0], r) and cond.args[0].op == "index":
        x, bound = b, cond.args[0].args[0]  # where(E < r, 0, x)
    else:
        return None
    if bound is None or r in sm.free_vars(bound) or r not in _val_vars(x):
        return None
    for var, ext in c.outer:
        if not ext.is_const or var not in sm.free_vars(bound):
            continue
        e, mapping = _split(bound, var, -(-ext.value // n) * n, n)
        if _is_var(e, "scan_l_"):
            reverse = False
        elif (sm.var("scan_l_", 0, n - 1) + e).is_const and (sm.var("scan_l_", 0, n - 1) + e).value == n - 1:
            reverse = True  # the bound is n - 1 - l: a flipped axis (a suffix sum read forwards)
        else:
            continue
        if "scan_l_" in _val_vars(ir.substitute(x, mapping)):
            return None  # the term moves with the position: not a prefix sum
        return ScanForm(var, ext, n, r, x, st.acc, reverse)
    return None


def applicable(c: Canon | None) -> bool:
    return scan_form(c) is not None
