"""Thread mode's output strips (knob `strip`: V): each thread computes V neighbouring outputs along one outer
loop, with every window tap unrolled, so a load two of its outputs share is issued once.

A 3x3 depthwise conv over NCHW (KernelBench 34) ran a thread per output: 9 input loads an output, 67 M
outputs. With 4 outputs a thread stacked along the rows, a thread's 4 x 9 input taps touch 6 rows x 3
columns: 18 loads instead of 36, the 9 weights and the bias once instead of 4 times. Nothing here knows
about convolutions: the V copies of the reduction's summands are built with the strip's variable and the
taps' variables substituted by numbers (`ir.substitute`), and since kernel values are interned, two
summands reading the same element are the same value and render once (the renderer's value memo). Which
outer loop to strip along is chosen by counting those distinct loads (`strip_plan`): the one that shares
the most, where it saves at least a quarter of them.
"""
from __future__ import annotations

import itertools
import os

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.interior import interior_form
from ..kernel.structure import Canon, UnsupportedKernel, _size
from .clike import _lanes_contiguous, acc_identity, compute_type
from .cuda_walks import loads_walk

STRIP_MAX_TAPS = 32  # V x taps summands straight-line at most STRIP_MAX_TAPS x V
# distinct loads at most (1 - this) of V separate outputs' loads (EMBER_STRIP_MIN_SAVING: A/B runs)
STRIP_MIN_SAVING = float(os.environ.get("EMBER_STRIP_MIN_SAVING", "0.25"))
# a loop V divides wins over a remainder strip (strip_plan; EMBER_STRIP_PREFER_DIVISIBLE=0: the fewest loads wins)
STRIP_PREFER_DIVISIBLE = os.environ.get("EMBER_STRIP_PREFER_DIVISIBLE", "1") == "1"


def _taps(c: Canon) -> list | None:
    """Every assignment of the reduction variables of c's one stage ([{var: value}]), or None where the
    stage count, the sizes or the tap count do not allow unrolling them."""
    if len(c.stages) != 1 or c.inner:
        return None
    s = c.stages[0]
    if not s.loops or not all(sm.sym(e).is_const for _, e in s.loops):
        return None
    sizes = [int(sm.sym(e).value) for _, e in s.loops]
    n = 1
    for z in sizes:
        n *= z
    if n > STRIP_MAX_TAPS:
        return None
    names = [v for v, _ in s.loops]
    return [dict(zip(names, t)) for t in itertools.product(*(range(z) for z in sizes))]


def _summands(c: Canon, var: str, V: int, base: sm.Expr, taps: list) -> list:
    """[[summand of output j at each tap] for j < V], `var` = V * base + j."""
    s = c.stages[0]
    out = []
    for j in range(V):
        m0 = {var: base * V + j}
        out.append([ir.substitute(s.update.value, {**m0, **dict(tap)}, {}) for tap in taps])
    return out


def _distinct_loads(vals: list) -> int:
    return sum(1 for v in ir.val_toposort(vals) if v.op == "load")


def strip_plan(k: ir.Kernel, c: Canon, V: int, exclude: str | None = None, fewest: bool = False) -> tuple | None:
    """(outer variable, its extent) to strip V outputs along, or None where no outer loop of a static
    extent of at least 2V shares enough of its outputs' loads (STRIP_MIN_SAVING) or the window cannot
    be unrolled. `exclude`: a variable the strip may not take (cols mode's lanes). A loop V divides wins
    over one it does not (a last strip of the remainder) whatever they share: real KernelBench 82's 3x3
    depthwise conv over 510 rows ran its V = 4 strip along the batch (shared weights only) at 816 us
    against the rows' V = 2 strip's 1268 (gpu-session45 e/). `fewest` (knob `sfewest`, searched): the fewest loads
    win, remainder or not — the rows' V = 4 took 82 to 671 us and 84 3173 -> 2662, but 85 706 -> 870 (gpu-session47 a/)."""
    taps = _taps(c)
    if taps is None or V < 2 or not c.stages[0].acc.dtype.is_float:
        return None
    one = _distinct_loads([v for lane in _summands(c, c.outer[-1][0], 1, sm.var("_s", 0, None), taps) for v in lane]) \
        if c.outer else 0
    best = None
    for var, ext in c.outer:
        if var == exclude:
            continue
        e = sm.sym(ext)
        if not e.is_const or e.value < 2 * V:
            continue
        n = _distinct_loads([v for lane in _summands(c, var, V, sm.var("_s", 0, e.value // V - 1), taps) for v in lane])
        key = (STRIP_PREFER_DIVISIBLE and not fewest and e.value % V > 0, n)
        if n <= (1 - STRIP_MIN_SAVING) * V * one and (best is None or key < best[0]):
            best = (key, var, e.value)
    return None if best is None else (best[1], best[2])


def render_strip(w, c: Canon, T: int, V: int):
    """Thread mode with V outputs a thread along strip_plan's loop (see the module doc). Returns the grid.
    An extent V does not divide leaves a last strip of its remainder, rendered as its own unrolled block
    (real KernelBench 44's 65537 outputs a row)."""
    plan = strip_plan(w.k, c, V, fewest=bool(w.cfg.get("sfewest")))
    if plan is None:
        raise UnsupportedKernel(f"strip {V}: no outer loop whose {V} neighbouring outputs share a quarter of their loads")
    var, ext = plan
    full, rem = divmod(ext, V)
    I = w.IDX
    sv = f"{var}_s"
    outer = [(sv, -(-ext // V)) if v == var else (v, e) for v, e in c.outer]
    if w.cfg.get("walk") == "loads":  # lanes along the loads' contiguous axis (cuda_walks.loads_walk)
        outer = loads_walk(outer, [s.update.value for s in c.stages])
    nrows = _size(outer)
    w.emit(1, f"for ({I} row_ = ({I})blockIdx.x * {T} + threadIdx.x; row_ < {w.idx(nrows)}; row_ += ({I})gridDim.x * {T}) {{")
    w.decompose("row_", outer, 2)
    base = sm.var(sv, 0, full - 1)
    # knob `interior`: a whole strip whose taps no guard can fail runs them unguarded (kernel/interior.py)
    form = interior_form(c, {"strip_j_": (0, V - 1)}, {var: base * V + sm.var("strip_j_", 0, V - 1)}) \
        if w.cfg.get("interior") else None

    def strips(ind: int):
        if form is None:
            return _strip_body(w, c, var, V, V, base, ind)
        w.emit(ind, f"if ({w.idx(form[0])}) {{")
        _strip_body(w, form[1], var, V, V, base, ind + 1)
        w.emit(ind, "} else {")
        _strip_body(w, c, var, V, V, base, ind + 1)
        w.emit(ind, "}")
    if not rem:
        strips(2)
    else:
        w.emit(2, f"if ({sv} < {full}) {{")
        strips(3)
        w.emit(2, "} else {  // the last strip: the remainder's outputs")
        _strip_body(w, c, var, V, rem, sm.sym(full), 3)
        w.emit(2, "}")
    w.emit(1, "}")
    return sm.minimum((nrows + (T - 1)) // T, 2 ** 31 - 1)


def _strip_body(w, c: Canon, var: str, V: int, n: int, base, ind: int):
    """The first n of a strip's V outputs, `var` = V * base + j: their taps' summands, then their stores."""
    s = c.stages[0]
    lanes = _summands(c, var, V, base, _taps(c))[:n]
    ct = compute_type(s.acc.dtype)
    accs = [f"{s.acc.name}_{j}" for j in range(n)]
    for a in accs:
        w.emit(ind, f"{ct} {a} = {acc_identity(s.acc.op, s.acc.dtype)};")
    w._ind = ind
    env = w.vr.vals([v for lane in lanes for v in lane], ind)
    for a, lane in zip(accs, lanes):  # (each output's taps in the loop's order: the same sums as one a thread)
        for v in lane:
            w.emit(ind, w.vr.update(ir.Update(a, s.update.op, v), env[v]))
    acc = store_acc(c)
    for j, a in enumerate(accs):
        m = {var: base * V + j}
        st = c.store  # (the accumulator replaced through substitute's memo)
        value = ir.substitute(st.value, m, {acc: ir.acc(a, acc.dtype)} if acc is not None else {})
        w.store(ir.Store(st.buffer, sm.substitute(st.index, m), value), None, 1, ind)


def render_cols_strip(w, c: Canon, T: int, cv: int, P: int, acc):
    """cols mode's `own` form (a warp's lanes `cv` consecutive points each along the innermost outer loop, vector
    loads, the whole window a warp) with knob `pstrip`: P neighbouring points along another outer loop a lane
    as well — a channels-last depthwise conv's neighbouring pixels — the window's taps unrolled and the vector
    loads the points share issued once (the same substitution as the thread strips). Returns the grid."""
    o = c.outer[-1][0]
    plan = strip_plan(w.k, c, P, exclude=o)
    if plan is None:
        raise UnsupportedKernel(f"pstrip {P}: no outer loop but the lanes' whose {P} neighbours share a quarter of their loads")
    var, ext = plan
    s = c.stages[0]
    taps = _taps(c)
    I, W = w.IDX, T // 32
    sv = f"{var}_s"
    outer = [(sv, ext // P) if v == var else (v, e) for v, e in c.outer]
    nrows = _size(outer)
    w.emit(1, "const int lane_ = threadIdx.x & 31;")
    w.emit(1, f"const {I} nrows_ = {w.idx(nrows)};")
    w.emit(1, f"for ({I} g_ = ({I})blockIdx.x * {W} + (threadIdx.x >> 5); g_ * {32 * cv} < nrows_; g_ += ({I})gridDim.x * {W}) {{")
    w.emit(2, f"const {I} row_ = g_ * {32 * cv} + lane_ * {cv};")
    w.emit(2, "if (row_ < nrows_) {")  # (the innermost outer extent is a multiple of cv: all in or all out)
    w.decompose("row_", outer, 3)
    base = sm.var(sv, 0, ext // P - 1)
    ct = compute_type(s.acc.dtype)
    names = [[f"{s.acc.name}_{p}_{j}" for j in range(cv)] for p in range(P)]
    for row in names:
        for n in row:
            w.emit(3, f"{ct} {n} = {acc_identity(s.acc.op, s.acc.dtype)};")
    summands = [v for lane in _summands(c, var, P, base, taps) for v in lane]  # [p * taps + t]
    w.emitted_groups = {}
    lanes = w.lanes(summands, o, cv)  # lanes[j][i]: summand i at point o + j (vector loads along o)
    w._ind = 3
    env = w.vr.vals([v for lane in lanes for v in lane], 3)
    nt = len(taps)
    for p in range(P):
        for j in range(cv):
            for t in range(nt):
                v = lanes[j][p * nt + t]
                w.emit(3, w.vr.update(ir.Update(names[p][j], s.update.op, v), env[v]))
    for p in range(P):
        emit_lane_stores(w, c, acc, o, names[p], {var: base * P + p}, 3)
    w.emit(2, "}")
    w.emit(1, "}")
    return sm.minimum((nrows + 32 * cv * W - 1) // (32 * cv * W), 2 ** 31 - 1)


def store_acc(c: Canon):
    """The accumulator value of c's first stage as its store reads it (None where the store does not)."""
    name = c.stages[0].acc.name
    return next((x for x in ir.val_toposort([c.store.value]) if x.op == "acc" and x.args[0] == name), None)


def emit_lane_stores(w, c: Canon, acc, o: str, names: list, m: dict, ind: int) -> None:
    """A lane's stores of len(names) consecutive points along `o` (point j's accumulator names[j]), the other
    variables substituted by `m`: one vector store where they are contiguous (cols mode's `own` form)."""
    cv = len(names)
    buf = w.k.buffer(c.store.buffer)
    nbytes = buf.dtype.itemsize * cv
    index = sm.substitute(c.store.index, m) if m else c.store.index
    packed = (c.store.buffer not in w.vr.locals and not buf.dtype.is_bool and nbytes in (4, 8, 16)
              and _lanes_contiguous(index, o, cv))
    raw_t = {16: "uint4", 8: "uint2", 4: "unsigned int"}.get(nbytes)
    if packed:
        w.emit(ind, f"{{ {raw_t} o_;")
    for j, n in enumerate(names):
        mj = dict(m, **({o: sm.var(o, 0, None) + j} if j else {}))
        memo = {acc: ir.Val("acc", (n,), acc.dtype)} if acc is not None else {}
        val = ir.substitute(c.store.value, mj, memo)
        w.emitted_groups = {}
        w._ind = ind
        value = w.vr.store(c.store.buffer, w.vr.vals([val], ind)[val])
        if packed:
            w.emit(ind, f"reinterpret_cast<{w.vr.d.storage_type(buf.dtype)}*>(&o_)[{j}] = {value};")
        else:
            w.emit(ind, f"{c.store.buffer}[{w.idx(sm.substitute(c.store.index, mj) if mj else c.store.index)}] = {value};")
    if packed:
        w.emit(ind, f"*reinterpret_cast<{raw_t}*>(&{c.store.buffer}[{w.idx(index)}]) = o_; }}")
