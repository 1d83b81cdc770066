"""Sibling kernels merged: two kernels over the same rows that recompute the same work become one
kernel with two outputs.

Attention's backward recomputes its scores in each gradient kernel (kernel/scores.py): dK reads
Sᵀ = k qᵀ and dPᵀ = v dOᵀ, dV reads Sᵀ again — the same products over the same key rows and the
same streamed queries, done twice. Neither kernel reads what the other writes, so one kernel can
compute both: its body is the first kernel's row body followed by the second's (the second's
buffers, locals, accumulators and inner loop variables renamed apart, its outer row loops renamed
to the first's). The IR stays plain — any backend runs it as the two bodies one after the other —
and a renderer that sees the repeated products (codegen/cuda_scores.py) computes them once.

Which pairs merge is the target's decision: `merge_siblings(kernels, candidate, accepts)` tries
pairs of kernels `candidate` names and keeps a merge `accepts(merged kernel)` takes (the CUDA
Target's hooks `online_softmax.siblings` — two `mma` tails sharing a score product — and
`.stat_chains` — kernel/scores.py `online_stats`; backends/cuda_target.py). A pair merges when
neither reads the other's outputs and the second can move up to the first: no kernel between them
writes what it reads or reads or writes what it writes. The merged kernel takes the first one's
place.

*Chains* (`chain=True`): the second may read the first's outputs, at the row being computed only
(the first stores a row statistic, the second reads it right after in the same row iteration —
still plain IR), and a merged kernel may merge again: the softmax's max, its sum and autograd's
D = sum P dP become one kernel, which the CUDA renderer runs as one online pass.
"""
from __future__ import annotations

from .. import symbolic as sm
from . import ir


def _rename_vals(v: ir.Val, buffers: dict, accs: dict, memo: dict) -> ir.Val:
    """v with load buffers renamed by `buffers` and accumulator reads by `accs`."""
    r = memo.get(v)
    if r is not None:
        return r
    if v.op == "load":
        b, idx, valid = v.args
        idx = _rename_vals(idx, buffers, accs, memo) if isinstance(idx, ir.Val) else idx
        r = ir.Val("load", (buffers.get(b, b), idx, valid), v.dtype)
    elif v.op == "acc":
        r = ir.Val("acc", (accs.get(v.args[0], v.args[0]),), v.dtype)
    elif v.srcs:
        r = ir.Val(v.op, tuple(_rename_vals(a, buffers, accs, memo) if isinstance(a, ir.Val) else a
                               for a in v.args), v.dtype)
    else:
        r = v
    memo[v] = r
    return r


def _rows(k: ir.Kernel) -> tuple:
    """(outer parallel loops [(var, extent)], the row body)."""
    body, rows = k.body, []
    while len(body) == 1 and isinstance(body[0], ir.Loop) and body[0].kind == "parallel":
        rows.append((body[0].var, body[0].extent))
        body = body[0].body
    return rows, body


def _inner_vars(body) -> set:
    return {s.var for s in ir.walk_stmts(body) if isinstance(s, ir.Loop)}


def _names(body) -> tuple:
    """(locals, accumulators) declared in `body`."""
    locs = {s.name for s in ir.walk_stmts(body) if isinstance(s, ir.Local)}
    accs = {s.name for s in ir.walk_stmts(body) if isinstance(s, ir.Acc)}
    return locs, accs


def merge(a: tuple, b: tuple, chain: bool = False) -> tuple | None:
    """(kernel, args) computing both (kernel, args) pairs `a` and `b` (same outer row loops), or None
    when their rows differ. `chain`: `b` may read what `a` writes, at the row being computed only (a
    row statistic: the merged body reads it right after storing it)."""
    (ka, aa), (kb, ab) = a, b
    rows_a, body_a = _rows(ka)
    rows_b, body_b = _rows(kb)
    if len(rows_a) != len(rows_b) or any(x[1] != y[1] for x, y in zip(rows_a, rows_b)):
        return None
    # buffers: b's params reading a buffer a has take a's param; the rest new names
    by_buffer = {aa[p.name]: p.name for p in ka.buffers}
    used = {p.name for p in ka.buffers}
    params, bufmap, args = list(ka.buffers), {}, dict(aa)
    for p in kb.buffers:
        buf = ab[p.name]
        if buf in by_buffer:
            mine = next(q for q in ka.buffers if q.name == by_buffer[buf])
            if p.role == "out" or (mine.role == "out" and not chain):
                return None  # (a buffer one writes and the other touches: not siblings)
            bufmap[p.name] = mine.name
            continue
        n = 0
        while f"b{n}" in used:
            n += 1
        used.add(f"b{n}")
        bufmap[p.name] = f"b{n}"
        params.append(ir.BufferParam(f"b{n}", p.dtype, p.size, p.role))
        args[f"b{n}"] = buf
    # b's locals, accumulators and inner loop variables renamed apart from a's
    locs_a, accs_a = _names(body_a)
    locs_b, accs_b = _names(body_b)
    taken = locs_a | accs_a | _inner_vars(body_a) | {v for v, _ in rows_a} | set(bufmap.values())

    def fresh(n: str) -> str:
        m, i = f"{n}_s", 1
        while m in taken:
            m, i = f"{n}_s{i}", i + 1
        taken.add(m)
        return m
    locmap = {n: fresh(n) for n in sorted(locs_b)}
    accmap = {n: fresh(n) for n in sorted(accs_b)}
    varmap = {v: fresh(v) for v in sorted(_inner_vars(body_b))}
    names = {**bufmap, **locmap}
    exact = {}
    for s in ir.walk_stmts(body_b):  # loop variables keep their extents (bounds) under renaming
        if isinstance(s, ir.Loop):
            exact[s.var] = sm.index_var(varmap[s.var], s.extent)
    for (vb, ext), (va, _) in zip(rows_b, rows_a):
        exact[vb] = sm.index_var(va, ext)
    memo: dict = {}
    imemo: dict = {}

    def val(v: ir.Val) -> ir.Val:
        return _rename_vals(ir.substitute(v, exact, imemo), names, accmap, memo)

    def stmt(s):
        if isinstance(s, ir.Loop):
            return ir.Loop(varmap.get(s.var, s.var), sm.substitute(s.extent, exact), s.kind, tuple(stmt(x) for x in s.body))
        if isinstance(s, ir.Local):
            return ir.Local(locmap[s.name], s.dtype, s.size)
        if isinstance(s, ir.Acc):
            return ir.Acc(accmap[s.name], s.op, s.dtype, s.tf32)
        if isinstance(s, ir.Update):
            return ir.Update(accmap.get(s.name, s.name), s.op, val(s.value))
        if isinstance(s, ir.Store):
            return ir.Store(names.get(s.buffer, s.buffer), sm.substitute(s.index, exact), val(s.value))
        raise TypeError(f"unexpected statement {s!r}")
    tail_b = tuple(stmt(s) for s in body_b)
    if chain and not _reads_only_its_row(body_a, tail_b, {p.name for p in ka.buffers if p.role == "out"}):
        return None
    body = tuple(body_a) + tail_b
    for var, ext in reversed(rows_a):
        body = (ir.Loop(var, ext, "parallel", body),)
    dims = tuple(ka.dims) + tuple(d for d in kb.dims if d not in ka.dims)
    k = ir.Kernel(f"{ka.name}_{kb.name}", tuple(params), dims, body, dict(ka.meta))
    ir.verify(k)
    return k, args


def _reads_only_its_row(body_a, body_b, outs: set) -> bool:
    """Whether every read in `body_b` of a buffer `body_a` writes is at the index `body_a` stores it
    (the row being computed, stored at the row level: not inside a loop)."""
    stored = {s.buffer: s.index for s in body_a if isinstance(s, ir.Store) and s.buffer in outs}
    for s in ir.walk_stmts(body_b):
        for v in ir.stmt_vals(s):
            for x in ir.val_toposort([v]):
                if x.op == "load" and x.args[0] in outs and (x.args[0] not in stored or x.args[1] != stored[x.args[0]]):
                    return False
    return True


def _touches(k: ir.Kernel, args: dict) -> tuple:
    """(buffers read, buffers written) by a kernel."""
    reads = {args[p.name] for p in k.buffers if p.role == "in"}
    writes = {args[p.name] for p in k.buffers if p.role == "out"}
    return reads, writes


def merge_siblings(kernels: list, candidate, accepts, chain: bool = False) -> list:
    """`kernels` ([(Kernel, args)] in execution order) with pairs merged into one kernel at the first
    one's place (module docstring): pairs of kernels `candidate(kernel)` says may merge, whose merged
    kernel `accepts(merged)`; a kernel merges at most once. `chain`: the second may read the first's
    outputs at its own rows (`merge`), and a merged kernel may merge again (a chain of row
    statistics, each reading the ones before it)."""
    out = list(kernels)
    ok = [bool(candidate(k)) for k, _ in out]
    i = 0
    while i < len(out):
        if not ok[i]:
            i += 1
            continue
        ra, wa = _touches(*out[i])
        between_r: set = set()
        between_w: set = set()
        merged = False
        for j in range(i + 1, len(out)):
            rb, wb = _touches(*out[j])
            dep = rb & wa if not chain else set()
            if ok[j] and not (dep or wb & ra or wb & wa or rb & between_w or wb & (between_r | between_w)):
                m = merge(out[i], out[j], chain)
                if m is not None and accepts(m[0]):
                    out[i] = m
                    ok[i] = chain
                    del out[j], ok[j]
                    merged = True
                    break
            between_r |= rb
            between_w |= wb
        if not (merged and chain):
            i += 1
    return out
