"""Prefix sums: a reduction `acc[.., l] = sum_r where(r <= l, x(r), 0)` (or `r >= l`: a suffix sum,
cumsum's gradient) whose bound `l` is an output
index running over the same extent as `r`, with `x` blind to `l`, is an inclusive scan of `x`
evaluated at `l`: out[l] = out[l - 1] + x(l). `cumsum` (ops/reduce.py) is built from such masked
sums over blocks of 32; a renderer that knows the form (codegen/cuda_scan.py: a warp's lanes are the
block's positions, a shuffle scan) does n work per block where the loops do n^2 and read every input
n times. The bound may be one output variable (`o2` of extent n) or that variable's residue in a
merged axis (`o1 % n`, the block index then `o1 // n`; the axis may end in a partial block): the matcher splits
each candidate output variable as `n * s + l` and asks the symbolic simplifier whether the bound
becomes `l` and `x` loses it.

A kernel may hold several such sums side by side (cumprod's log-magnitude and negative-count scans,
fused into the one kernel that writes the output): each stage is a scan of its own term over the
same positions, none reading another's total, and the renderers run them in the same lanes.
Likewise several short sums over the same rows."""
from __future__ import annotations

from dataclasses import dataclass

from .. import graph as g
from .. import symbolic as sm
from . import ir
from .node_args import reduce_axes
from .structure import Canon, _val_vars

MAX_LEN = 32  # positions a scan may have: a warp's lanes


@dataclass
class ScanForm:
    var: str | None  # the output variable the bound reads (None: a short sum, kept at the last lane)
    extent: sm.Expr  # its extent (its last block may be partial: a padded axis sliced back)
    n: int  # positions per scan (the reduce loop's extent)
    r: str  # the reduce variable
    x: ir.Val  # the summed term, a function of r and of the outputs other than the position
    acc: ir.Acc
    reverse: bool = False  # output position l holds the prefix up to n - 1 - l
    shift: int = 0  # block b holds positions n * b + shift + l (b from -1 when shift > 0)
    suffix: bool = False  # the sum runs over r >= the bound (cumsum's gradient): lanes read r = n - 1 - lane
    rest: tuple = ()  # (r, x, acc) of the kernel's further stages, scanned alongside in the same lanes

    def terms(self) -> list:
        """(reduce variable, term, accumulator) of every stage, in the kernel's order."""
        return [(self.r, self.x, self.acc), *self.rest]


def masked_short_sum(n: g.Node) -> bool:
    """Whether graph node n is a sum over one axis of at most MAX_LEN terms of where(mask, t, 0)
    with the mask computed from positions alone (iotas): the shape of cumsum's masked sums, before
    any kernel exists. The partition (kernel/builder.py, rule 4) inlines a costly term into such a
    sum instead of materialising it: as a scan each term is read once (at most MAX_LEN times if the
    kernel falls back to loops), where a stored term costs a write and a read of its own."""
    if n.op != g.SUM:
        return False
    axes = reduce_axes(n)
    src = n.srcs[0]
    if len(axes) != 1 or not src.shape[axes[0]].is_const or src.shape[axes[0]].value > MAX_LEN or src.op != g.WHERE:
        return False
    cond, a, b = src.srcs
    if not any(_zero_node(x) for x in (a, b)):
        return False
    return _positions_only(cond, 0)


def _zero_node(n: g.Node) -> bool:
    while n.op in (g.VIEW, g.CAST):
        n = n.srcs[0]
    return n.op == g.CONST and n.arg == 0


def _positions_only(n: g.Node, depth: int) -> bool:
    """Whether n is computed from iotas and constants alone (through views, casts, compares)."""
    if n.op in (g.IOTA, g.CONST):
        return True
    if depth > 8 or n.op in (g.INPUT, g.DATA) or n.op in g.REDUCE or not n.srcs:
        return False
    return all(_positions_only(s, depth + 1) for s in n.srcs)


def _is_const(v: ir.Val, value) -> bool:
    return v.op == "const" and v.args[0] == value


def _is_zero(v: ir.Val) -> bool:
    """A term that is 0 wherever it is read: a zero constant or a load whose guard is false."""
    v = v.args[0] if v.op == "cast" else v
    return _is_const(v, 0) or _is_const(v, 0.0) or (v.op == "load" and v.args[2] is sm.ZERO)


def _is_var(e: sm.Expr, name: str) -> bool:
    return e.op == "var" and e.args[0] == name


def _lt_sides(v: ir.Val, r: str):
    """For `v` = lt(a, b) between index values, ("r<", E) when a is r, (">r", E) when b is r."""
    if v.op != "lt" or v.args[0].op != "index" or v.args[1].op != "index":
        return None
    a, b = v.args[0].args[0], v.args[1].args[0]
    if _is_var(a, r):
        return "r<", b
    if _is_var(b, r):
        return ">r", a
    return None


def _bound(cond: ir.Val, r: str, negate: bool = False):
    """(E, suffix) when `cond` (negated: the term is taken where it fails) reads `r <= E` (suffix
    False: a prefix sum) or `r >= E` (suffix True: cumsum's gradient), else None."""
    if cond.op == "where" and _is_const(cond.args[1], False) and _is_const(cond.args[2], True):
        return _bound(cond.args[0], r, not negate)
    sides = _lt_sides(cond, r)
    if sides is None:
        return None
    side, e = sides
    if not negate:  # r < E: r <= E - 1;  E < r: r >= E + 1
        return (e - 1, False) if side == "r<" else (e + 1, True)
    return (e, True) if side == "r<" else (e, False)  # not (r < E): r >= E;  not (E < r): r <= E


def _split(e: sm.Expr, var: str, ext: int, n: int, shift: int):
    """`e` with `var` = n * s + l + shift over the blocks that start inside the axis."""
    s, l = sm.var("scan_s_", 0, max(0, (ext - 1 - shift) // n)), sm.var("scan_l_", 0, n - 1)
    return sm.substitute(e, {var: s * n + l + shift}), {var: s * n + l + shift}


def _first_block_ok(bound: sm.Expr, x: ir.Val, var: str, ext: int, n: int, shift: int, reverse: bool) -> bool:
    """Block -1's positions o < shift: lane l = o + n - shift must see the bound it would (l, or
    n - 1 - l reversed) and the same terms as position 0 (the renderer reads them there) — or
    every term of theirs is zero."""
    x0 = ir.substitute(x, {var: sm.const(0)})
    if all(_is_zero(ir.substitute(x, {var: sm.const(o)})) for o in range(min(shift, ext))):
        return True  # their terms all guarded off (a shifted axis's first positions): sums of zeros
    for o in range(min(shift, ext)):
        l = o + n - shift
        e = sm.substitute(bound, {var: sm.const(o)})
        if not e.is_const or e.value != (n - 1 - l if reverse else l):
            return False
        if ir.substitute(x, {var: sm.const(o)}) is not x0:
            return False
    return True


def _short_sums(c: Canon | None):
    """[(stage, reduce variable)] and the common extent n of a kernel whose stages are each one sum
    over one loop of the same 2 <= n <= MAX_LEN terms, none reading another's total, else None."""
    if c is None or not c.stages or c.inner:
        return None
    accs = {st.acc.name for st in c.stages}
    out, n = [], None
    for st in c.stages:
        if st.acc.op != "sum" or len(st.loops) != 1 or any(ir.reads_acc(st.update.value, a) for a in accs):
            return None
        r, n_e = st.loops[0]
        if not n_e.is_const or not 2 <= n_e.value <= MAX_LEN or n not in (None, n_e.value):
            return None
        out.append((st, r))
        n = n_e.value
    return out, n


def scan_form(c: Canon | None) -> ScanForm | None:
    found = _short_sums(c)
    if found is None or c is None:
        return None
    stages, n = found
    forms = []
    for st, r in stages:
        one = _stage_scan(c, st, r, n)
        if one is None:
            return None
        forms.append(one)
    f = forms[0]
    layout = (f.var, f.reverse, f.shift, f.suffix)
    if any((o.var, o.reverse, o.shift, o.suffix) != layout for o in forms[1:]):
        return None  # the stages scan different positions: not one set of lanes
    f.rest = tuple((o.r, o.x, o.acc) for o in forms[1:])
    return f


def _stage_scan(c: Canon, st, r: str, n: int) -> ScanForm | None:
    """The scan one stage's masked sum is, or None."""
    v = st.update.value
    cast = None
    if v.op == "cast":  # a half-precision term widened to the accumulator's type
        cast, v = v.dtype, v.args[0]
    if v.op != "where":
        return None
    cond, a, b = v.args
    if _is_const(b, 0) or _is_const(b, 0.0):
        x, found = a, _bound(cond, r)
    elif _is_const(a, 0) or _is_const(a, 0.0):
        x, found = b, _bound(cond, r, negate=True)  # where(c, 0, x): x where c fails
    else:
        return None
    if found is None:
        return None
    bound, suffix = found
    if r in sm.free_vars(bound) or r not in _val_vars(x):
        return None
    if cast is not None:
        x = ir.Val("cast", (x,), cast)
    for var, ext in c.outer:
        if not ext.is_const or var not in sm.free_vars(bound):
            continue
        # blocks may start `shift` positions in (an exclusive cumsum: the scan of x[:-1] written
        # from position 1; a flipped axis padded to whole blocks): block -1 then holds positions
        # 0..shift-1, which the symbolic split (over the blocks that start inside) does not cover,
        # so each is checked on its own
        for shift in range(n):
            e, mapping = _split(bound, var, ext.value, n, shift)
            l = sm.var("scan_l_", 0, n - 1)
            if _is_var(e, "scan_l_"):
                reverse = False
            elif (l + e).is_const and (l + e).value == n - 1:
                reverse = True  # the bound is n - 1 - l: a flipped axis (a suffix sum read forwards)
            else:
                continue
            if "scan_l_" in _val_vars(ir.substitute(x, mapping)):
                return None  # the term moves with the position: not a prefix sum
            if not _first_block_ok(bound, x, var, ext.value, n, shift, reverse):
                continue
            return ScanForm(var, ext, n, r, x, st.acc, reverse, shift, suffix)
    return None


def applicable(c: Canon | None) -> bool:
    return scan_form(c) is not None


def short_sum_form(c: Canon | None) -> ScanForm | None:
    """A plain sum of n <= 32 terms read contiguously along the reduction (cumsum's block totals,
    any short row sum): the same warp layout, its lanes the terms, the total the scan's last lane.
    A warp per row (warp mode) reads 128 bytes and waits; here a warp keeps U rows' loads in
    flight (the H100, 4096 x 8192 summed in blocks of 32: 318 us in warp mode, bench/scan.py)."""
    found = _short_sums(c)
    if found is None:
        return None
    stages, n = found
    for st, r in stages:
        if not _contiguous_terms(st.update.value, r, n):
            return None
    (st, r), rest = stages[0], stages[1:]
    return ScanForm(None, sm.const(n), n, r, st.update.value, st.acc,
                    rest=tuple((r2, st2.update.value, st2.acc) for st2, r2 in rest))


def _contiguous_terms(x: ir.Val, r: str, n: int) -> bool:
    """Some load of x moves with r, and every one that does moves by one element (the lanes coalesce)."""
    loads = [v for v in ir.val_toposort([x]) if v.op == "load" and not isinstance(v.args[1], ir.Val)]
    if not any(r in sm.free_vars(v.args[1]) for v in loads):
        return False
    for v in loads:
        idx = v.args[1]
        if r in sm.free_vars(idx):
            at = [sm.substitute(idx, {r: sm.const(i)}) for i in (0, 1, n - 1)]
            steps = (at[1] - at[0], at[2] - at[0])
            # (or by minus one: a flipped axis, its lanes reading one line downwards)
            if not all(d.is_const for d in steps) or abs(steps[0].value) != 1 \
                    or steps[1].value != steps[0].value * (n - 1):
                return False
    return True
