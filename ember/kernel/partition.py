"""Which nodes get a buffer (are *materialised*): the fusion decision of the default lowering.

Everything else is inlined into the kernel of the node that consumes it, evaluated at the consumer's
coordinates:

* elementwise chains fuse into their consumers and producers; views are never materialised — a view
  is index arithmetic substituted into the loads of whatever reads it;
* a reduction becomes a *stage* of its consumer's kernel (an accumulator and a reduce loop) when it
  is read at coordinates that depend on a set O of the kernel's output dimensions, the same set for
  every stage: the kernel then loops over O in parallel, runs the stages, and finishes the remaining
  dimensions in an inner loop. softmax and layernorm are one kernel this way (rows in O), and a
  matmul with a bias + activation epilogue is one kernel (all output dims in O).

A node is materialised when (rules applied to a fixpoint):

1. it is a graph output, or the data operand of a gather (which reads arbitrary positions), or a
   collective or its source (a collective runs between kernels, on whole buffers);
2. it is a reduction read by more than one kernel, or at more than one coordinate tuple, or inside
   another reduction's loop at coordinates that depend on that loop (a nested reduction);
3. it is a reduction whose dependence set differs from the kernel's O, or that depends on O only
   through coarser coordinates (GroupNorm's statistics at channel // 8 in a kernel over channels):
   recomputing it per point of a larger O would multiply its cost;
4. it is a non-trivial elementwise computation read through a broadcasting view inside a reduction
   loop (recomputing it per broadcast copy would multiply its cost) — the rule that materialises a
   conv's input activation instead of recomputing it kh·kw·C_out times. Not a term of up to 32
   operations read by a masked short sum (cumsum's blocks, kernel/scan.py `masked_short_sum`): run
   as a scan, the sum reads each term once. Nor, with EMBER_WINDOW_INLINE=1 (untimed), a producer of up
   to 16 operations read at most 4 times over by a window that is no contraction (a max pool over a
   BatchNorm + ReLU: kernel/recompute.py `broadcast_read`).
5. it is a contraction (a sum of a product) read at coordinates that divide or take remainders of
   the consumer's loop variables (an interleaving or merging view: a transposed conv's phases, a
   pixel shuffle, a flatten): inlined, its rows and columns would be hidden behind that arithmetic
   and it could not run as a tiled GEMM; materialised, the view is one cheap copy.
6. it is one of several contractions over the same whole output in one kernel (SwiGLU's
   silu(x·Wg) · (x·Wu)): two GEMMs cannot share one tile loop, so all but one are materialised and
   read by the remaining one's epilogue (inlined, the kernel would be two CUDA-core dot products
   per output, untiled).
7. it is inlined into more than one kernel and its inlined expression (up to materialised nodes)
   holds more than INLINE_MAX operations: recomputing a long expression in every consumer made an
   unrolled LSTM quadratic, each step re-deriving its cell state from the last materialised one
   (see `_recomputed`).
   7b. ... or it reads REREAD_MIN or more buffers of its own size (at least REREAD_NUMEL elements):
   every consumer re-reads them all, where materialised they are read once (see `_reread`).
8. it sits INLINE_DEPTH_MAX levels deep in its kernel's expression (a chain of thousands of
   elementwise operations): the kernel is cut there rather than walked with deeper recursion.
   Rule 8 is applied last, when no other rule has anything to add: an unrolled recurrence's state
   is first cut at its shared steps by rule 7 (run early, in the same round, while any kernel is too
   deep to walk), where cutting at whatever node sat at the depth limit fragmented a 100-step LSTM
   into 1374 single-operation kernels.

(A few-row contraction recomputing an RMSNorm per output — a decode GEMV reading its norm's
statistic itself, kernel/recompute.py — was tried and reverted: per warp it cost more than the norm's
own kernel, 13.1 against 5.7 + 2.4 us for the qkv GEMV on the H100.) The rules are monotone, so
after the fixpoint a reduction that only a transient state materialised and that one kernel reads is
inlined back into that kernel when the reader then needs nothing new (`_demoted`: the decode step's
residual stream, materialised by rule 7b, becomes the down projection's epilogue).

With ``local=True`` (a structure candidate of the search), rules 2 and 4 may instead keep the
intermediate in a kernel-local array computed once per outer point (see `_localize`), and reductions
over the whole output become per-element reductions of the inner loop: attention becomes one kernel
with its scores on chip.

The search (ember/search) explores other choices; this is the deterministic default.
"""
from __future__ import annotations

import os

from .. import graph as g
from .builder import analyzed_builder

INLINE_MAX = 64  # operations an expression inlined into several kernels may hold (rule 7)
# rule 7b: buffers of its own size an expression inlined into several kernels may read, at this many
# elements or more (EMBER_REREAD_MIN=0 turns the rule off, for A/B runs; EMBER_REREAD_NUMEL moves the
# size floor: 2^18 until the twenty-eighth session, which left a decode step's 2048-wide residual
# stream inlined into every norm, 2L + 1 rows re-read by one block at layer L)
REREAD_MIN = int(os.environ.get("EMBER_REREAD_MIN", "3"))
REREAD_NUMEL = int(os.environ.get("EMBER_REREAD_NUMEL", "256"))


class LoweringError(RuntimeError):
    """The partition did not reach its fixpoint (an internal fault of the lowering, not of the graph)."""


def _lowest_shared(order: list, M: set, costly) -> set:
    """The nodes inlined into more than one kernel for which costly(n, inlined) holds, lowest first,
    each judged with the lower ones chosen already materialised (its expression then stops at them).
    A recurrence's state thus gets all its cuts in one round, where judging every node against the
    unchanged M took one round per cut and re-analysed every later step each round: an LSTM's
    lowering grew with the square of its steps (64 steps 32 s, KernelBench's 512 x 6 layers over 10
    minutes). A node's readers do not change when nodes below it are materialised (the kernels that
    reach it still do; a new kernel reaches only nodes below its root, decided earlier), so this
    is the set the rounds reached one at a time."""
    def inlined(n) -> bool:
        return n not in M and n.op not in g.LEAVES

    readers: dict = {}
    for r in order:
        if r in M and r.op not in g.LEAVES:
            for n in _region(r, inlined):
                readers[n] = readers.get(n, 0) + 1
    low: set = set()

    def below_cut(n) -> bool:
        return inlined(n) and n not in low
    for n in order:  # sources first
        if readers.get(n, 0) > 1 and costly(n, below_cut):
            low.add(n)
    return low


def _recomputed(order: list, M: set) -> set:
    """Rule 7: nodes inlined into more than one kernel whose inlined expression (distinct operations
    up to materialised nodes) is longer than INLINE_MAX. Of those, the lowest are returned: once
    they are materialised, the expressions above them are short again. An erf-based GELU read by a
    layernorm's kernels stays inlined (~50 operations); a recurrence's state, which grows by a
    step's worth of operations per step, is cut every step or two. The expression stops at
    reductions (one read by several kernels is rule 2's): counted through a GRU step's not yet
    materialised products, it cut the gates' small sums instead of the state."""
    def costly(n, inlined) -> bool:  # (a reduction below n: a buffer or a stage, rule 2's business)
        return len(_region(n, lambda x: inlined(x) and x.op not in g.REDUCE, INLINE_MAX)) >= INLINE_MAX
    return _lowest_shared(order, M, costly)


def _reread(order: list, M: set) -> set:
    """Rule 7b: nodes inlined into more than one kernel whose inlined expression reads REREAD_MIN or
    more buffers of the node's own size, REREAD_NUMEL elements or more: inlined, every consumer
    re-reads all of them; materialised, they are read once and the node once per consumer. A
    transformer's residual stream (the embedding plus every layer's outputs) inlined into each norm
    and its gradient kernels read 2L + 1 buffers each: a 6-layer training step's norm kernels read
    13-17 buffers of 16 MB. A decode step's rows count too: its norm kernels are one block each,
    and reading 2L + 1 rows there put a growing serial chain on the step's critical path (6 -> 23
    us a norm over 16 layers in the megakernel's timeline, bench/results/gpu-session27-2026-11-27/h/);
    materialised, the stream is the down projection's epilogue (no kernel of its own). Below
    REREAD_NUMEL elements (a token id's wrap-around, a position) a kernel of its own would cost
    more than the re-reads. The lowest such nodes are returned, as in rule 7."""
    if REREAD_MIN <= 0:
        return set()

    def rereads(n, inlined) -> bool:
        if not n.numel.is_const or n.numel.value < REREAD_NUMEL:
            return False
        size = n.numel.value
        bufs = {s for x in _region(n, inlined) | {n} for s in x.srcs
                if not inlined(s) and s.numel.is_const and s.numel.value == size}
        return len(bufs) >= REREAD_MIN
    return _lowest_shared(order, M, rereads)


def _region(r, inlined, limit: int | None = None) -> set:
    """The nodes inlined into root r's kernel (r itself excluded); with `limit`, the walk stops once
    it has found that many."""
    seen: set = set()
    stack = [s for s in r.srcs if inlined(s)]
    while stack and (limit is None or len(seen) < limit):
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(s for s in n.srcs if inlined(s))
    return seen


class _AskedLog:
    """The materialised set as one kernel analysis sees it, recording every node it asks about: the
    analysis is a function of its root and of those answers, so it only needs redoing once one of
    them changes (partition's fixpoint re-analyses just those roots)."""
    __slots__ = ("M", "asked")

    def __init__(self, M: set):
        self.M = M
        self.asked: set[g.Node] = set()

    def __contains__(self, n) -> bool:
        self.asked.add(n)
        return n in self.M


def partition(outputs: list, force=frozenset(), local=False) -> set:
    """The set of materialised nodes (fixpoint of the rules in the module docstring), including any
    nodes the caller forces (a searched kernel boundary). With `local`, intermediates read along one
    loop of a row kernel may live in kernel-local arrays instead of being materialised; `local` may
    also be a set of roots, which alone take the streaming local mode (kernel/online.py).

    Each round analyses only the roots whose analysis can have changed: new roots, and roots that
    asked about a node materialised in the last round. (Re-analysing every root each round made an
    unrolled recurrence quadratic: its chain is cut about one step per round.)"""
    order = g.toposort(outputs)
    M = {n for n in outputs} | {n for n in force if n.op not in (g.INPUT, g.DATA)}
    M |= set(getattr(local, "buffers", ()))  # (operands a streamed kernel reads from buffers: kernel/lower.py)
    M |= {n.srcs[0] for n in order if n.op == g.GATHER and n.srcs[0].op not in (g.INPUT, g.DATA)}
    # a collective runs between kernels (kernel/lower.py CollectiveStep): it and its source are buffers
    M |= {n for n in order if n.op == g.COLLECTIVE}
    M |= {n.srcs[0] for n in order if n.op == g.COLLECTIVE and n.srcs[0].op not in (g.INPUT, g.DATA)}
    asked_by: dict = {}  # node -> roots whose current analysis asked whether it is materialised
    analysis: dict = {}  # root -> (nodes it asked about, its stage nodes other than itself)
    reached: dict = {}  # stage node -> roots whose kernels compute it as a stage
    dirty = {n for n in M if n.op not in (g.INPUT, g.DATA)}
    position = {n: i for i, n in enumerate(order)}
    deferred: dict = {}  # root -> its analysis's rule-8 (depth) cuts, applied only when nothing else is
    recomputed: set = set()  # the cuts of rule 7 (undone at the end where no longer shared: _demoted)
    for _ in range(10 * len(order) + 10):
        new: set = set()
        touched: set = set()  # stage nodes whose set of computing roots grew this round
        for r in sorted(dirty, key=position.__getitem__):
            if r.op == g.COLLECTIVE:  # not a kernel: nothing to analyse
                continue
            old_asked, old_stages = analysis.pop(r, ((), ()))
            for n in old_asked:
                asked_by[n].discard(r)
            for n in old_stages:
                reached[n].discard(r)
            log = _AskedLog(M)
            b, an = analyzed_builder(r, log, lambda n: "x", 0, None, local)
            new |= an.materialize - an.deep
            deferred.pop(r, None)
            if an.deep:
                deferred[r] = an.deep
            stages = {st.node for st in an.stages if st.node is not r}
            for n in stages:
                reached.setdefault(n, set()).add(r)
            touched |= stages
            for n in log.asked:
                asked_by.setdefault(n, set()).add(r)
            analysis[r] = (log.asked, stages)
        new |= {n for n in touched if len(reached[n]) > 1}  # counted once every dirty root is redone
        new = {n for n in new if n not in M and n.op not in (g.INPUT, g.DATA)}
        if deferred:  # expressions too deep to walk: cut a recurrence's shared state (rule 7) now,
            # not after the rounds that re-walk them (an unrolled LSTM's 128 steps took 71 s without)
            cut = {n for n in _recomputed(order, M | new) if n not in M}
            recomputed |= cut
            new |= cut
        if not new:
            new = _recomputed(order, M)
            recomputed |= new
            new = new or _reread(order, M)
        if not new:  # rule 8 last: a recurrence's state cut by rule 7 is shallow again, not cut at random depths
            new = {n for cuts in deferred.values() for n in cuts if n not in M}
        if not new:
            return _demoted(order, M, asked_by, outputs, force, local, recomputed)
        M |= new
        dirty = set(new) | {r for r in deferred if r in M}  # (analysed past their deferred cuts: redo)
        for n in new:
            dirty |= asked_by.get(n, set())
    raise LoweringError("kernel partitioning did not converge")  # pragma: no cover


def _demoted(order: list, M: set, asked_by: dict, outputs: list, force, local, recomputed=frozenset()) -> set:
    """The fixpoint, less the reductions and rule-7 cuts that only a transient state of it
    materialised: the rules are monotone, so a contraction materialised while several kernels still
    inlined it stays a buffer after a later round gives it a single reader (a decode GEMV's output
    once the residual stream it fed is materialised by rule 7b), and so does a piece of a
    recurrence's step that rule 7 cut while the step itself was still inlined everywhere (a GRU
    whose output sequence is stacked: z * h cut below h, which rule 4 materialises later — two
    kernels a step instead of one). Each such node read by exactly one kernel is inlined back into
    that kernel (its epilogue) when the reader's analysis then asks for nothing new."""
    if local is True:  # (a search candidate's local mode: kept as chosen)
        return M
    streamed = local if isinstance(local, frozenset) else frozenset()
    keep = set(outputs) | set(force) | streamed
    keep |= {n.srcs[0] for n in order if n.op in (g.GATHER, g.COLLECTIVE)}  # (buffers by rule 1)
    for n in [n for n in order if n in M and (n.op in g.REDUCE or n in recomputed) and n not in keep]:
        readers = [r for r in asked_by.get(n, ()) if r in M and r is not n and r.op not in g.LEAVES]
        if len(readers) != 1 or readers[0] in streamed or readers[0].op == g.COLLECTIVE:
            continue
        trial = M - {n}
        _, an = analyzed_builder(readers[0], trial, lambda x: "x", 0, None, local)
        if not an.deep and not {x for x in an.materialize if x not in trial and x.op not in (g.INPUT, g.DATA)}:
            M = trial
    return M
