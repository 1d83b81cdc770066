"""The shapes a lowered kernel can have, recognised for the renderers and the search.

`canonical` splits a kernel into outer parallel loops, reduction stages and an inner parallel tail
(the form the default lowering produces); `contraction_of` recognises a stage that sums a product
a(batch, m, k) * b(batch, n, k) — a matmul, a linear layer, an implicit-GEMM convolution — with the
store's value as its epilogue."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .. import symbolic as sm
from . import ir


class UnsupportedKernel(ValueError):
    """The kernel's loop structure is not one a renderer knows how to map."""


# ------------------------------------------------------------------------------------------------
# canonical structure


@dataclass
class StageInfo:
    acc: ir.Acc
    loops: list  # [(var, extent)] outermost first
    update: ir.Update


@dataclass
class Canon:
    outer: list  # [(var, extent)]
    stages: list  # StageInfo
    inner: list  # [(var, extent)]
    store: ir.Store


def canonical(k: ir.Kernel) -> Canon:
    body, outer = k.body, []
    while len(body) == 1 and isinstance(body[0], ir.Loop) and body[0].kind == "parallel":
        outer.append((body[0].var, body[0].extent))
        body = body[0].body
    stages, i = [], 0
    while i < len(body) and isinstance(body[i], ir.Acc):
        acc, loops, j = body[i], [], i + 1
        inner_body = body[j:j + 1]
        while len(inner_body) == 1 and isinstance(inner_body[0], ir.Loop) and inner_body[0].kind == "reduce":
            loops.append((inner_body[0].var, inner_body[0].extent))
            inner_body = inner_body[0].body
        if len(inner_body) != 1 or not isinstance(inner_body[0], ir.Update):
            raise UnsupportedKernel(f"{k.name}: stage {acc.name} is not a reduce loop nest around one update")
        stages.append(StageInfo(acc, loops, inner_body[0]))
        i = j + 1
    tail = body[i:]
    inner = []
    while len(tail) == 1 and isinstance(tail[0], ir.Loop) and tail[0].kind == "parallel":
        inner.append((tail[0].var, tail[0].extent))
        tail = tail[0].body
    if len(tail) != 1 or not isinstance(tail[0], ir.Store):
        raise UnsupportedKernel(f"{k.name}: expected one store at the end of the kernel")
    if not stages:
        outer, inner = outer + inner, []
    return Canon(outer, stages, inner, tail[0])


def _size(loops) -> sm.Expr:
    return sm.prod(e for _, e in loops)

# ------------------------------------------------------------------------------------------------
# contractions: a stage that sums a product a(batch, m, k) * b(batch, n, k)


@dataclass
class Contraction:
    batch: list  # [(var, extent)]
    m: list
    n: list
    k: list
    a: ir.Val
    b: ir.Val
    stage: StageInfo
    a_k_fastest: bool  # whether a's memory index moves fastest along k (else along m)
    b_k_fastest: bool


def _val_vars(v: ir.Val) -> set:
    out: set = set()
    for x in ir.val_toposort([v]):
        if x.op == "load":
            if not isinstance(x.args[1], ir.Val):
                out |= sm.free_vars(x.args[1])
            out |= sm.free_vars(x.args[2])
        elif x.op == "index":
            out |= sm.free_vars(x.args[0])
    return out


def _first_load_index(v: ir.Val):
    for x in ir.val_toposort([v]):
        if x.op == "load" and not isinstance(x.args[1], ir.Val):
            return x.args[1]
    return None


def _unit_run(e, loops: list) -> int:
    """How many consecutive memory elements index e walks when the given loops (outermost first)
    advance innermost-first: the innermost loop's extent if its stride is 1, times the next one's
    while its stride equals the run so far (a flattened, contiguous span). 0 if not unit-stride; a
    symbolic extent counts as long (a dynamic-size row is not assumed short)."""
    run = 1
    for var, ext in reversed(loops):
        X = sm.var(var, 0, None)
        step = sm.substitute(e, {var: X + 1}) - sm.substitute(e, {var: X})
        if not (step.is_const and step.value == run):
            break
        if not ext.is_const:
            return 1 << 30
        run *= ext.value
    return run if run > 1 else 0


def _k_is_fastest(v: ir.Val, kloops: list, rows: list) -> bool:
    """Whether consecutive GPU threads should walk k (else the operand's rows) when loading v's tiles:
    the direction with the longer contiguous span in memory. A matmul's a (M, K) walks k; a conv's
    input walks its output columns (the kernel window's k span is only kw long, the row span is a
    whole image row or more)."""
    e = _first_load_index(v)
    if e is None:
        return True
    return _unit_run(e, kloops) >= _unit_run(e, rows)


def contraction_of(c: Canon) -> Contraction | None:
    """The contraction a kernel computes, or None. m: output dims only a reads, n: only b reads (the
    output's fastest-varying dim is put in n, so consecutive GPU threads store consecutive elements)."""
    if len(c.stages) != 1 or c.inner or not c.stages[0].loops:
        return None
    st = c.stages[0]
    if st.acc.op != "sum":
        return None
    v = st.update.value
    while v.op == "cast":
        v = v.args[0]
    if v.op != "mul":
        return None
    a, b = v.args
    va, vb = _val_vars(a), _val_vars(b)
    kv = [x for x, _ in st.loops]
    if not all(x in va and x in vb for x in kv):
        return None
    outer = c.outer
    m = [(x, e) for x, e in outer if x in va and x not in vb]
    n = [(x, e) for x, e in outer if x in vb and x not in va]
    if not m and not n:
        return None
    if not m:  # one operand varies with no output dim (a dot product per output): it is "b"
        a, b, m, n, va, vb = b, a, n, m, vb, va
    if outer and any(x == outer[-1][0] for x, _ in m):  # the output's fastest dim walks the threads (n)
        a, b, m, n = b, a, n, m
    batch = [(x, e) for x, e in outer if (x, e) not in m and (x, e) not in n]
    return Contraction(batch, m, n, st.loops, a, b, st, _k_is_fastest(a, st.loops, m), _k_is_fastest(b, st.loops, n))


# ------------------------------------------------------------------------------------------------
# row kernels with kernel-local arrays (the lowering's local mode)


@dataclass
class LocalItem:
    local: ir.Local
    var: str
    inner: StageInfo | None  # a reduction computed per entry
    store: ir.Store  # local[var] = value


@dataclass
class LocalCanon:
    outer: list  # [(var, extent)]: one block (GPU) per point
    items: list  # LocalItem | StageInfo, in order
    inner: list  # tail loops [(var, extent)]
    tail_stages: list  # StageInfo per tail element
    store: ir.Store


def _stage_of(acc: ir.Acc, rest: Sequence, where: str) -> StageInfo:
    loops, body = [], tuple(rest[:1])
    while len(body) == 1 and isinstance(body[0], ir.Loop) and body[0].kind == "reduce":
        loops.append((body[0].var, body[0].extent))
        body = body[0].body
    if len(body) != 1 or not isinstance(body[0], ir.Update):
        raise UnsupportedKernel(f"{where}: stage {acc.name} is not a reduce loop nest around one update")
    return StageInfo(acc, loops, body[0])


def local_canonical(k: ir.Kernel) -> LocalCanon:
    """Parse a kernel produced by the local lowering mode."""
    nest, outer = k.body, []
    while len(nest) == 1 and isinstance(nest[0], ir.Loop) and nest[0].kind == "parallel":
        outer.append((nest[0].var, nest[0].extent))
        nest = nest[0].body
    items: list[LocalItem | StageInfo] = []
    i = 0
    body = list(nest)
    while i < len(body):
        s = body[i]
        if isinstance(s, ir.Local):
            lp = body[i + 1]
            if not (isinstance(lp, ir.Loop) and lp.kind == "parallel"):
                raise UnsupportedKernel(f"{k.name}: local {s.name} is not followed by its loop")
            entry_stage, st = None, list(lp.body)
            if isinstance(st[0], ir.Acc):
                entry_stage = _stage_of(st[0], st[1:], k.name)
                st = st[2:]
            if len(st) != 1 or not isinstance(st[0], ir.Store) or st[0].buffer != s.name:
                raise UnsupportedKernel(f"{k.name}: local {s.name}'s loop does not end in one store to it")
            items.append(LocalItem(s, lp.var, entry_stage, st[0]))
            i += 2
        elif isinstance(s, ir.Acc):
            items.append(_stage_of(s, body[i + 1:], k.name))
            i += 2
        else:
            break
    tail = body[i:]
    inner = []
    while len(tail) == 1 and isinstance(tail[0], ir.Loop) and tail[0].kind == "parallel":
        inner.append((tail[0].var, tail[0].extent))
        tail = list(tail[0].body)
    tail_stages, j = [], 0
    while j < len(tail) and isinstance(tail[j], ir.Acc):
        tail_stages.append(_stage_of(tail[j], tail[j + 1:], k.name))
        j += 2
    if len(tail) != j + 1 or not isinstance(tail[j], ir.Store):
        raise UnsupportedKernel(f"{k.name}: expected one store at the end of the kernel")
    return LocalCanon(outer, items, inner, tail_stages, tail[j])


def has_locals(k: ir.Kernel) -> bool:
    return any(isinstance(s, ir.Local) for s in ir.walk_stmts(k.body))
