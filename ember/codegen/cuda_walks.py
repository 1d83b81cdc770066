"""Which way a reduction's lanes should walk memory (the CUDA schedule's analyses behind `cols` mode):
along the outer points (a sum over a middle axis, a pooling window over channels-last pixels) or along
the reduction, and whether a lane can take several consecutive outputs as vectors."""
from __future__ import annotations

from .. import symbolic as sm
from ..kernel import ir
from ..kernel.structure import Canon
from .clike import _lanes_contiguous


def _unit_stride(e: sm.Expr, var: str) -> bool:
    x = sm.var(var, 0, None)
    return sm.substitute(e, {var: x + 1}) - sm.substitute(e, {var: x}) is sm.ONE


def _lanes_coalesced(e: sm.Expr, var: str, loop_vars: set) -> bool:
    """Whether 32 consecutive values of `var` (a warp's lanes) read at most twice the 32-byte sectors
    of one contiguous run of 4-byte elements: a transposed conv's phases interleaved along a row
    (`4225*((o3 + 1) % 2) + (o3 + 1) // 2`: two runs of 16) read as well as a plain row."""
    free = sm.free_vars(e)
    if var not in free or not free <= loop_vars:
        return False
    x = sm.var(var, 0, None)
    step = sm.substitute(e, {var: x + 1}) - sm.substitute(e, {var: x})
    if step.is_const:  # a plain stride (most loads): lanes that far apart, no evaluation needed
        return abs(int(step.value)) <= 2
    for base in (0, 32, 96):
        env = {v: 0 for v in free}
        addrs = {int(sm.evaluate(e, dict(env, **{var: base + i}))) for i in range(32)}
        if len(addrs) < 32 or len({a // 8 for a in addrs}) > 8:
            return False
    return True


def short_window_runs(c: Canon) -> bool:
    """Whether the reductions are windows read in short runs that neighbouring outputs continue: every
    load varying with a reduction variable is unit-stride along a reduction loop of fewer than 32 taps
    (a window's row) and steps at most 16 elements with the innermost outer variable (the next output's
    window starts a stride further). Lanes should then take outputs (thread mode): a warp per output
    splits an 11 x 11 average pool's taps over its lanes, each lane's loads 11 rows apart (the real
    KernelBench's 45: 10.7 ms in warp mode, 4.1 ms a thread per output on the H200, gpu-session45 g/)."""
    if not c.outer or any(not s.loops for s in c.stages):
        return False
    o, ext = c.outer[-1]
    if not (ext.is_const and ext.value >= 32):
        return False
    seen = False
    x = sm.var(o, 0, None)
    for s in c.stages:
        reds = {n: e for n, e in s.loops}
        for v in ir.val_toposort([s.update.value]):
            if v.op != "load":
                continue
            if isinstance(v.args[1], ir.Val):
                return False
            idx = v.args[1]
            if not sm.free_vars(idx) & set(reds):
                continue
            runs = [n for n in reds if _unit_stride(idx, n)]
            if not runs or any(not (sm.sym(reds[n]).is_const and sm.sym(reds[n]).value < 32) for n in runs):
                return False
            step = sm.substitute(idx, {o: x + 1}) - sm.substitute(idx, {o: x})
            if not (step.is_const and 1 <= int(step.value) <= 16):
                return False
            seen = True
    return seen


def columns_contiguous(k: ir.Kernel, c: Canon) -> bool:
    """Whether the reductions read memory along the outer points rather than along the reduction:
    some stage load is contiguous in the innermost outer variable and none in the innermost
    reduction variable (a sum over a middle axis). Lanes should then take outer points (cols mode)."""
    if not c.outer or any(not s.loops for s in c.stages):
        return False
    o = c.outer[-1][0]
    loop_vars = {n for n, _ in c.outer} | {n for s in c.stages for n, _ in s.loops}
    along_rows = along_red = False
    for s in c.stages:
        rv = s.loops[-1][0]
        for v in ir.val_toposort([s.update.value]):
            if v.op == "load" and not isinstance(v.args[1], ir.Val):
                along_rows |= _unit_stride(v.args[1], o) or _lanes_coalesced(v.args[1], o, loop_vars)
                # a load the same for every outer point (x of a GEMV x @ W) is a broadcast to the
                # lanes, wherever it runs: only loads that also vary with the outer point count
                along_red |= _unit_stride(v.args[1], rv) and o in sm.free_vars(v.args[1])
            elif v.op == "load" and _walks_in_gather(v.args[1], rv):
                # a gather along the reduction (an embedding row: table[ids[row] * D + r]) reads
                # along it: BERT's embeddings + LayerNorm took 121 us in cols mode on the H100
                along_red = True
    return along_rows and not along_red


def _walks_in_gather(index: ir.Val, rv: str) -> bool:
    """Whether an indirect load's index adds the reduction variable itself to what it gathers."""
    return any(x.op == "index" and _unit_stride(x.args[0], rv) for x in ir.val_toposort([index]))


def cols_vec_ok(k: ir.Kernel, c: Canon, cv: int) -> str | None:
    """None when cols mode can give each lane `cv` consecutive outputs (one reduction stage, no
    tail, the innermost output extent a multiple of cv, every load that varies with the outputs a
    contiguous vector of at most 16 bytes along them), else why not."""
    if len(c.stages) != 1 or c.inner or not c.outer or cv not in (2, 4, 8):
        return "one reduction stage, no tail, cv of 2, 4 or 8"
    o, ext = c.outer[-1]
    loads = [v for v in ir.val_toposort([c.stages[0].update.value]) if v.op == "load" and not isinstance(v.args[1], ir.Val)
             and o in sm.free_vars(v.args[1])]
    if not (ext.is_const and ext.value % cv == 0) or not loads or any(
            not _lanes_contiguous(v.args[1], o, cv) or v.dtype.itemsize * cv > 16 for v in loads):
        return f"the outputs' loads are not {cv}-wide contiguous vectors"
    return None


def loads_shared_by_columns(c: Canon) -> bool:
    """Whether no stage load depends on the innermost outer variable: neighbouring outputs read the
    same values (a scan's masked sums), so one thread per output gets every load as a broadcast and
    a warp per output would only add shuffles."""
    if not c.outer or any(not s.loops for s in c.stages):
        return False
    o, ext = c.outer[-1]
    if not (ext.is_const and ext.value >= 32):
        return False
    for s in c.stages:
        for v in ir.val_toposort([s.update.value]):
            if v.op == "load" and not isinstance(v.args[1], ir.Val) and o in sm.free_vars(v.args[1]):
                return False
    return True


def loads_walk(outer: list, vals: list, exclude: str | None = None) -> list:
    """`outer` with the variable along which most of the loads in `vals` are unit-stride moved innermost (a
    thread-mode kernel's lanes then read consecutive elements): knob `walk` = "loads". A depthwise conv over
    an NCHW input storing channels-last (real KernelBench 86) has its channels innermost, so its lanes load a
    plane apart; walked along the pixels, its loads coalesce and its stores stride instead. Unchanged where
    no variable but `exclude` (a strip's) has a unit-stride load."""
    loads = [v for v in ir.val_toposort(vals) if v.op == "load" and not isinstance(v.args[1], ir.Val)]
    counts = {var: sum(_unit_stride(v.args[1], var) for v in loads) for var, _ in outer if var != exclude}
    best = max(counts, key=lambda var: counts[var], default=None)
    if best is None or not counts[best] or best == outer[-1][0]:
        return outer
    return [lp for lp in outer if lp[0] != best] + [lp for lp in outer if lp[0] == best]
