"""Default lowering: partition the graph into kernels (kernel/partition.py, whose docstring states
the materialisation rules) and lower each to the kernel IR (kernel/builder.py).

With ``local=True`` (a structure candidate of the search), intermediates read along one loop of a
row kernel may live in kernel-local arrays: attention becomes one kernel with its scores on chip.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..graph import Node
from ..symbolic import Expr
from . import ir
from .builder import (INLINE_DEPTH_MAX, LOCAL_MAX, Analysis, KernelBuilder, LocalStage, Stage, acc_dtype,
                      analyzed_builder, flat_index, unflatten)
from .partition import INLINE_MAX, LoweringError, _region, partition
from .prologue import staged_operands
from .fold import fold_constants
from .layout import contraction_layouts
from .layout_windows import window_constant_layouts
from .layout_gemm import aligned_gemm_layouts
from .layout_phases import phase_layouts
from .distribute import distribute_sums
from .recompute import ENABLED as RECOMPUTE
from .split import split_long_reductions
from .online import online_form
from .siblings import merge_siblings
from .contraction import is_gemm_shaped, product_operands

__all__ = ["lower", "LoweredGraph", "StateWrite", "CollectiveStep", "BufferInfo", "LoweringError", "partition",
           "analyzed_builder", "KernelBuilder", "Stage", "LocalStage", "Analysis", "acc_dtype", "flat_index", "unflatten",
           "INLINE_MAX", "INLINE_DEPTH_MAX", "LOCAL_MAX"]


@dataclass
class BufferInfo:
    name: str
    dtype: dt.DType
    shape: tuple
    kind: str  # "input" | "data" | "temp" | "output"
    node: Node

    @property
    def size(self) -> Expr:
        return sm.prod(self.shape)


@dataclass(frozen=True)
class StateWrite:
    """`updated` (the state after the write: the state's shape) equals graph input `state` outside
    [start, start + extent) along `axis`. It is materialised in the state's own buffer by a kernel
    over that region only, so a write costs the new rows, not a copy of the state."""
    state: Node
    updated: Node
    axis: int
    start: Expr
    extent: Expr


@dataclass(frozen=True)
class CollectiveStep:
    """A collective between kernels (ember/primitives/collective.py): buffer `dst` gets the
    collective of buffer `src` across the ranks. It runs after the kernels before it and before
    those after it, on the executor's stream (NCCL on the GPU)."""
    op: str  # the COLLECTIVE node's argument ("all_reduce/2", "all_gather/1/2")
    src: str
    dst: str
    nbytes: Expr  # bytes each rank receives


@dataclass
class LoweredGraph:
    buffers: dict  # name -> BufferInfo
    kernels: list  # (Kernel, {param: buffer}) in execution order
    outputs: list  # buffer names, in output order
    inputs: list  # graph input names
    dims: list  # symbolic dim names
    collectives: list = field(default_factory=list)  # (number of kernels that run before it, CollectiveStep)

    def summary(self) -> str:
        lines = [f"{len(self.kernels)} kernel(s)"]
        for k, args in self.kernels:
            lines.append(str(k))
            lines.append("  args: " + ", ".join(f"{p}={b}" for p, b in args.items()))
        return "\n".join(lines)


def lower(outputs: list, output_names: list | None = None, force=None, local=None, target=None,
          writes: tuple = ()) -> LoweredGraph:
    token = RECOMPUTE.set(bool(getattr(target, "fold_norms", False)))  # (kernel/recompute.py)
    try:
        return _lower(outputs, output_names, force, local, target, writes)
    finally:
        RECOMPUTE.reset(token)


def _lower(outputs: list, output_names: list | None, force, local, target, writes: tuple) -> LoweredGraph:
    """Partition the graph rooted at `outputs` (nodes) into kernels in execution order. `force` (or
    the `forced` attribute of a search candidate) names extra nodes to materialise. `target` (a
    backends Target) sets the split thresholds; None: the defaults (the H100's). `writes`
    (StateWrite) are values the program stores into its state inputs in place: each is materialised
    into its state's buffer by a kernel over the written region, and its readers read it there."""
    force = force if force is not None else getattr(outputs, "forced", frozenset())
    local = local if local is not None else getattr(outputs, "local", False)
    outputs = list(outputs)
    n_out = len(outputs)
    roots = outputs + [w.updated for w in writes]
    if not force:  # (forced nodes name nodes of this very graph: keep it as it is)
        # a softmax-weighted contraction the target streams is not split (it reads every key anyway)
        keep = _streamable if getattr(target, "online_softmax", None) is not None and not local else None
        roots = aligned_gemm_layouts(contraction_layouts(phase_layouts(fold_constants(roots), target), target), target)
        roots = window_constant_layouts(roots, target)  # (kernel/layout_windows.py)
        roots = split_long_reductions(distribute_sums(roots), target.split if target is not None else None, keep)
    outputs, values = roots[:n_out], roots[n_out:]
    _check_writes(writes, values, outputs)
    order = g.toposort(roots)
    if not local and not force:
        local = online_roots(roots, target) or False
    M = partition(roots, force, local)
    if not force:  # GEMM operands inlined as prologues, as buffers TMA can copy (kernel/prologue.py)
        streamed = set().union(*(_inlined(r, M) for r in local)) if isinstance(local, frozenset) else set()
        staged = staged_operands(roots, target, M, streamed)
        if staged:
            M = partition(roots, staged, local)
    buffers: dict = {}
    names: dict = {}
    n_data = n_temp = 0
    for n in order:
        if n.op == g.INPUT:
            names[n] = f"in_{n.arg}"
            buffers[names[n]] = BufferInfo(names[n], n.dtype, n.shape, "input", n)
        elif n.op == g.DATA:
            names[n] = f"w{n_data}"
            n_data += 1
            buffers[names[n]] = BufferInfo(names[n], n.dtype, n.shape, "data", n)
    out_names = []
    for i, o in enumerate(outputs):
        nm = f"out{i}" if output_names is None else f"out_{output_names[i]}"
        out_names.append(nm)
        buffers[nm] = BufferInfo(nm, o.dtype, o.shape, "output", o)
    regions: dict = {}
    for w, v in zip(writes, values):
        names[v] = f"in_{w.state.arg}"
        regions[v] = (w.axis, w.start, w.extent)
    for n in order:
        if n in M and n not in names and n.op not in (g.INPUT, g.DATA) and n not in outputs:
            names[n] = f"t{n_temp}"
            n_temp += 1
            buffers[names[n]] = BufferInfo(names[n], n.dtype, n.shape, "temp", n)
    # an output node's own buffer is its first output name (repeated outputs are copied)
    first_out: dict[Node, str] = {}
    for nm, o in zip(out_names, outputs):
        first_out.setdefault(o, nm)
    for o, nm in first_out.items():
        if o.op not in (g.INPUT, g.DATA):
            names[o] = nm

    kernels: list[tuple[ir.Kernel, dict]] = []
    collectives: list = []
    sizes = {b.name: b.size for b in buffers.values()}
    for n in order:
        if n not in M or n.op in (g.INPUT, g.DATA):
            continue
        if n.op == g.COLLECTIVE:
            step = CollectiveStep(str(n.arg), names[n.srcs[0]], names[n], sm.prod(n.shape) * n.dtype.itemsize)
            collectives.append((len(kernels), step))
            continue
        b, an = analyzed_builder(n, M, lambda x: names[x], len(kernels), sizes, local, regions.get(n))
        if an.materialize:
            raise LoweringError(f"partition not at fixpoint for {n}: {an.materialize}")
        kernels.append(b.build(names[n]))
    # outputs that are graph inputs or constants, or repeated outputs: copy kernels
    for nm, o in zip(out_names, outputs):
        if o.op in (g.INPUT, g.DATA) or first_out[o] != nm:
            b = KernelBuilder(o, M, lambda x: names[x], len(kernels), sizes)
            b.copy_from(names[o])
            kernels.append(b.build(nm))
    # kernels over the same rows recomputing the same products, merged where the target says so
    hook = getattr(target, "online_softmax", None)
    siblings, chains = getattr(hook, "siblings", None), getattr(hook, "stat_chains", None)
    if chains is not None and not force and not collectives:  # (row statistics reading each other: online)
        kernels = merge_siblings(kernels, chains.candidate, chains, chain=True)
    if siblings is not None and not force and not collectives:
        kernels = merge_siblings(kernels, siblings.candidate, siblings)
    ins = [n.arg for n in order if n.op == g.INPUT]
    dims = set(g.symbolic_dims(roots))
    for w in writes:
        dims |= sm.free_vars(w.start) | sm.free_vars(w.extent)
    return LoweredGraph(buffers, kernels, out_names, ins, sorted(dims), collectives)


def _check_writes(writes, values: list, outputs: list) -> None:
    """A written state is a graph input, updated by a kernel of its own (not an output, nor another
    write); the region is checked against the state's extent at run time."""
    seen: set = set()
    for w, v in zip(writes, values):
        what = f"the write into state {w.state.arg!r}"
        if w.state.op != g.INPUT:
            raise LoweringError(f"{what}: a state must be a graph input")
        if v.op in (g.INPUT, g.DATA, g.CONST) or v in outputs or v in seen:
            raise LoweringError(f"{what}: the updated state must be computed by the program and written once "
                                "(not an input, a constant, an output or another write)")
        seen.add(v)
        if v.dtype != w.state.dtype or v.shape != w.state.shape:
            raise LoweringError(f"{what}: the updated state {v.dtype.name}{sm.shape_str(v.shape)} differs from "
                                f"the state {w.state.dtype.name}{sm.shape_str(w.state.shape)}")


def online_roots(roots: list, target) -> frozenset:
    """The kernels (by root) that stream their softmax-weighted contraction in one pass
    (kernel/online.py) because `target` renders that form (its `online_softmax(kernel, form)` hook
    says yes): attention with its scores never stored. Their kernels take the streaming local mode;
    every other kernel is partitioned as before. A root whose kernel stops matching once the rest
    of the graph is partitioned (another kernel reads its probabilities: training) is dropped."""
    accepts = getattr(target, "online_softmax", None)
    if accepts is None:
        return frozenset()
    # a hook marked `prologues` renders operands the kernel computes itself (q's rotary, masks):
    # those are inlined instead of stored (builder: "stream+")
    mode = "stream+" if getattr(accepts, "prologues", False) else "stream"
    nodes = g.toposort(roots)
    if not any(n.op == g.MAX for n in nodes) or not any(n.op == g.EXP2 for n in nodes):
        return frozenset()

    names = {n: f"t{i}" for i, n in enumerate(nodes)}
    sizes = {names[n]: sm.prod(n.shape) for n in nodes}

    def streams(r, M) -> bool:
        if r.op in g.LEAVES or r.op == g.COLLECTIVE:
            return False
        b, an = analyzed_builder(r, M, names.__getitem__, 0, sizes, mode)
        if not b.local_of or an.materialize:
            return False
        k = b.build("x")[0]
        form = online_form(k)
        return form is not None and bool(accepts(k, form, target))

    # candidates: contractions of the default partition reading a materialised softmax-like operand
    # (an exp2 of something a max reduced): attention's P @ V
    base = partition(roots, frozenset(), False)

    def softmaxed(x) -> bool:
        while x.op in (g.VIEW, g.CAST) and x not in base:
            x = x.srcs[0]
        if x not in base or x.op in g.LEAVES:
            return False
        region = _inlined(x, base)
        return any(n.op == g.MAX for n in region) and any(n.op == g.EXP2 for n in region)

    def reads_softmax(r) -> bool:
        return any(any(softmaxed(s) for s in (product_operands(n) or ())) for n in _inlined(r, base))

    def reduced_operands(r) -> set:
        # what the streamed kernel reads that a reduction computes, as buffers: V when a split-K
        # projection's chunks are summed into it (stored as the product reads it, a 16-bit cast),
        # and the projections q, k and v themselves (the first GEMM-shaped contraction on each
        # operand's path below the scores and below V). Otherwise the streamed kernel keeps them
        # in local arrays (BERT's k and v, varying along the head dim, not along the rows the
        # softmax's stages walk): no online form, and attention falls back to four kernels.
        out = set()
        for n in _inlined(r, base):
            for s in product_operands(n) or ():
                y = s
                while y.op == g.VIEW:
                    y = y.srcs[0]
                x = y
                while x.op in (g.VIEW, g.CAST):
                    x = x.srcs[0]
                if x.op in g.REDUCE and not softmaxed(s):
                    out.add(y)
        scores = _first_contractions([o for o in product_operands(r) or () if softmaxed(o)], {r})
        others = [o for o in product_operands(r) or () if not softmaxed(o)]
        return out | _first_contractions(others, {r}) | \
            _first_contractions([o for sc in scores for o in product_operands(sc) or ()], scores)

    def stored_operands(r) -> set:
        # the second try: the operands themselves stored (q, k and v with their bias adds — BERT's —
        # which the streamed kernel would otherwise compute per score, outside the online form)
        sc = _first_contractions([o for o in product_operands(r) or () if softmaxed(o)], {r})
        ops = [o for o in product_operands(r) or () if not softmaxed(o)] + \
            [o for c in sc for o in product_operands(c) or ()]
        out = set()
        for o in ops:
            while o.op == g.VIEW:
                o = o.srcs[0]
            if o.op not in g.LEAVES:
                out.add(o)
        return out

    def side_reductions(r) -> set:
        # reductions the kernel reads besides its softmax and its products: an SDPA mask's "row has
        # a key" (a max over the mask alone, guarding the scores and the output rows), stored first
        # (the streamed analysis would otherwise store the probabilities beside it)
        out = set()
        for n in _inlined(r, base):
            for x in n.srcs:
                if x in base and x.op in g.REDUCE and product_operands(x) is None and not softmaxed(x) \
                        and not any(y.op == g.EXP2 for y in _inlined(x, base)):
                    out.add(x)
        return out

    def attempt(chosen, stored) -> StreamRoots:
        while chosen:
            streamed = StreamRoots(chosen, mode == "stream+", set().union(*map(stored, chosen)))
            M = partition(roots, frozenset(), streamed)
            kept = frozenset(r for r in chosen if r in M and streams(r, M))
            if kept == chosen:
                return streamed
            chosen = kept
        return StreamRoots(chosen, mode == "stream+")

    # first as the default partition leaves them (a decode step streams so, q's rotary inside);
    # the roots that do not stream then retry with their projections stored, then their operands
    candidates = frozenset(r for r in base if r.op not in g.LEAVES and reads_softmax(r))
    best = attempt(candidates, lambda r: set()) if candidates else StreamRoots((), mode == "stream+")
    failed = candidates - best
    for more in (lambda r: reduced_operands(r) | side_reductions(r),
                 lambda r: reduced_operands(r) | stored_operands(r) | side_reductions(r)):
        if not failed or len(best) == len(candidates):
            break
        tried = attempt(candidates, lambda r, more=more: more(r) if r in failed else set())
        if len(tried) > len(best):
            best = tried
    if getattr(accepts, "scores", False):  # (scores the online kernels above leave stored)
        best = score_roots(roots, partition(roots, frozenset(), best) if best else base, best, accepts, target,
                           names, sizes)
    return best


def _expanding(n) -> bool:
    """A score: a GEMM-shaped contraction over at most 256 that writes at least as many values as
    either operand holds (attention's q kᵀ and dO vᵀ: L² from L·D)."""
    from .node_args import reduce_axes
    ops = product_operands(n)
    if ops is None or not is_gemm_shaped(n):
        return False
    depth = sm.prod([n.srcs[0].shape[a] for a in reduce_axes(n)])
    if not depth.is_const or depth.value > 256:
        return False
    def values(x) -> int:  # (a symbolic length taken long)
        e = sm.prod(x.shape)
        return sm.evaluate(e, {v: 4096 for v in sm.free_vars(e)})

    def held(x):  # the values an operand holds: below its broadcasting views and casts
        while x.op in (g.VIEW, g.CAST):
            x = x.srcs[0]
        return values(x)
    return all(values(n) >= held(o) for o in ops)


def score_roots(roots: list, base: set, streamed: StreamRoots, accepts, target, names: dict, sizes: dict) -> StreamRoots:
    """`streamed` plus the kernels that recompute attention's scores instead of reading them from
    memory (kernel/scores.py): attention's backward. In the default partition a score (`_expanding`)
    and what is computed elementwise from it at its size (P, dS) are buffers; every kernel reading
    them becomes a streamed root that recomputes them per key tile, and the row statistics those
    kernels read (the softmax's max and sum, D = sum P dP, each a reduction over the scores) become
    streamed roots of their own, stored. Kept only where a softmax's max is among them and the
    target renders every kernel in streamed-score form; a root whose kernel does not match is
    dropped and the rest retried."""
    from .scores import score_form
    scores = {n for n in base if n.op not in g.LEAVES and _expanding(n)}
    if not scores:
        return streamed
    sizes_of = {sm.prod(n.shape) for n in scores}
    sb = set(scores)
    for n in g.toposort(roots):  # elementwise results at a score's size read from score buffers
        if n in base and n not in sb and n.op not in g.LEAVES and n.op not in g.REDUCE and \
                sm.prod(n.shape) in sizes_of and any(s in sb for x in _inlined(n, base) for s in x.srcs):
            sb.add(n)
    readers = {r for r in base if r not in sb and r.op not in g.LEAVES and r.op != g.COLLECTIVE
               and any(s in sb for x in _inlined(r, base) for s in x.srcs)}
    def statistic(n) -> bool:  # a reduction over the keys that is not itself a contraction
        return n.op in g.REDUCE and not (product_operands(n) is not None and is_gemm_shaped(n))
    stats = {r for r in readers if statistic(r)}
    for x in sb:  # statistics inlined into the kernels of score buffers (D = sum P dP in dS's)
        stats |= {n for n in _inlined(x, base) if n is not x and statistic(n)}
    if not any(n.op == g.MAX for n in stats):
        return streamed
    chosen = frozenset(readers | stats) - streamed
    while chosen:
        sr = StreamRoots(streamed | chosen, streamed.prologues, streamed.buffers | (stats & chosen), chosen)
        M = partition(roots, frozenset(), sr)
        kept = set()
        for r in chosen:
            if r not in M:
                continue
            b, an = analyzed_builder(r, M, names.__getitem__, 0, sizes, "stream")
            if b.local_of and not an.materialize:
                k = b.build("x")[0]
                form = score_form(k)
                if form is not None and accepts(k, form, target):
                    kept.add(r)
        if kept == chosen:
            return sr
        chosen = frozenset(kept)
    return streamed


def _first_contractions(starts: list, skip: set, limit: int = 256) -> set:
    """The GEMM-shaped contractions first met below `starts` (through elementwise steps, views and
    other reductions; at most `limit` nodes walked)."""
    found, seen, todo = set(), set(skip), list(starts)
    while todo and len(seen) < limit:
        n = todo.pop()
        if n in seen or n.op in g.LEAVES:
            continue
        seen.add(n)
        if n.op in g.REDUCE and product_operands(n) is not None and is_gemm_shaped(n):
            found.add(n)
            continue
        todo.extend(n.srcs)
    return found


class StreamRoots(frozenset):
    """The roots that take the streaming local mode, and whether their operands' prologues are
    inlined (`prologues`: the Target's hook renders computed operands; not for the `plain` roots,
    whose renderer stages plain loads only: kernel/scores.py)."""
    prologues: bool
    buffers: frozenset  # nodes the streamed kernels read that are materialised (their V when a sum)
    plain: frozenset

    def __new__(cls, roots, prologues: bool = False, buffers=frozenset(), plain=frozenset()):
        s = super().__new__(cls, roots)
        s.prologues = prologues
        s.buffers = frozenset(buffers)
        s.plain = frozenset(plain)
        return s


def _inlined(r, M) -> set:
    """r and the nodes inlined into its kernel (up to materialised nodes and leaves)."""
    return _region(r, lambda n: n not in M and n.op not in g.LEAVES) | {r}


def softmax_weighted(n) -> bool:
    """Whether n is a contraction with an operand made (through elementwise steps) from an exp2 of
    something a max reduced: a softmax-weighted sum, P @ V (the online form's candidates)."""
    ops = product_operands(n)
    if ops is None:
        return False
    for x in ops:
        seen: set = set()
        stack, exp2, mx = [x], False, False
        while stack and len(seen) < 64:
            y = stack.pop()
            if y in seen:
                continue
            seen.add(y)
            exp2 |= y.op == g.EXP2
            mx |= y.op == g.MAX
            if y.op not in g.LEAVES and y.op not in g.REDUCE:
                stack.extend(y.srcs)
            elif y.op == g.SUM:  # the normaliser: a sum of the same exponentials
                stack.extend(y.srcs)
        if exp2 and mx:
            return True
    return False


def _streamable(n) -> bool:
    """A contraction the split-K pass leaves whole for the streamed form: softmax-weighted, 16-bit
    operands, an output axis of 64 or 128 (the head dims the flash renderers take)."""
    from .node_args import reduce_axes
    axes = reduce_axes(n) if n.op == g.SUM else ()
    return softmax_weighted(n) and all(x.dtype in (dt.bfloat16, dt.float16) for x in (product_operands(n) or ())) \
        and any(d.is_const and d.value in (64, 128) for i, d in enumerate(n.shape) if i not in axes)
