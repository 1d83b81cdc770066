"""Sharding annotations and their propagation: a whole-model graph -> one rank's graph with the
collectives its layouts need (docs/distributed.md).

    w1 = em.tensor(W1); w2 = em.tensor(W2)
    y = ((x @ w1.T).gelu() @ w2.T) + b
    local = shard_graph([y.node], {w1.node: 0, w2.node: 1}, rank, world)   # Megatron's MLP

The annotated leaves (constants or inputs) are split into `world` equal blocks along the given axis;
every other node's layout follows from its sources, in topological order. A layout is one of

* ``R``  replicated: every rank holds the whole value;
* ``S(a)`` split: rank r holds block r of axis a;
* ``P``  partial: every rank holds a term, the value is their sum (a contraction over a split axis).

Rules (``x`` a source, each rule tried in this order; what no rule covers is made replicated
first, so the result is always the global graph's value, only perhaps with more communication):

==========================  ====================================================================
elementwise                 sources S(a) and R: the R ones sliced to the rank's block of a -> S(a);
                            add(P, P) and mul(P, R) -> P (linear); any other P is all-reduced to R
sum over axes               S(a), a summed -> P; S(a), a kept -> S(a); P -> P
max over axes               S(a), a kept -> S(a); else the source is made R
view (affine, unmasked)     S(a) -> S(b) when a run of output axes b.. reads input axis a whole
                            (a permute, a broadcast, a reshape splitting a: b, the outermost, then
                            splits over the ranks; other axes may be sliced); rebuilt for the
                            rank's shapes. Other views (merging a with another axis, pads) read R
gather                      from a table split along axis 0: each rank gathers the positions in
                            its rows, zero elsewhere -> P (a vocab-split embedding); else R sources
philox, anything else       sources made R
==========================  ====================================================================

Making a source R: S(a) -> all_gather along a; P -> all_reduce. The graph's outputs are made R, so
every rank returns the whole value (or, with ``keep_outputs=True``, its own layout).
"""
from __future__ import annotations

import math

import numpy as np

from . import graph as g
from . import symbolic as sm
from .graph import Node
from .primitives import GraphError
from .view import View, index_name, row_major_strides

R, P = ("R",), ("P",)


def S(axis: int) -> tuple:
    return ("S", axis)


class Sharder:
    """One rank's translation of a global graph (see the module docstring)."""

    def __init__(self, specs: dict, rank: int, world: int, bounds: dict | None = None):
        self.specs, self.rank, self.world, self.bounds = specs, rank, world, bounds or {}
        self.local: dict = {}  # global node -> (local node, layout)
        self.whole: dict = {}  # global node -> its local node made replicated
        self.collectives = 0

    # ---------------------------------------------------------------- layouts
    def _block(self, n) -> tuple:
        size = sm.sym(n)
        if not size.is_const or size.value % self.world:
            raise GraphError(f"a sharded axis of length {size} does not split evenly over {self.world} ranks")
        k = size.value // self.world
        return self.rank * k, (self.rank + 1) * k

    def replicated(self, n: Node) -> Node:
        """n's whole value on this rank (gathering or reducing it as its layout needs)."""
        x, lay = self.local[n]
        if lay == R:
            return x
        if n not in self.whole:  # (once per node, however many consumers need it whole)
            self.whole[n] = self._collect(x, lay)
            self.collectives += 1
        return self.whole[n]

    def _collect(self, x: Node, lay: tuple) -> Node:
        if lay == P:  # (a view of a partial sum is the view of the sum: reduce the viewed buffer)
            if x.op == g.VIEW and x.arg.valid is sm.ONE:
                return g.view_node(g.collective_node(x.srcs[0], "all_reduce", self.world), x.arg)
            return g.collective_node(x, "all_reduce", self.world)
        a = lay[1]  # all_gather concatenates along axis 0: move a there and back with views
        order = [a] + [d for d in range(len(x.shape)) if d != a]
        moved = g.apply_view(x, lambda v: v.permute(order)) if a else x
        y = g.collective_node(moved, "all_gather", self.world)
        back = [order.index(d) for d in range(len(x.shape))]
        return g.apply_view(y, lambda v: v.permute(back)) if a else y

    def sliced(self, n: Node, axis: int) -> Node:
        """Replicated n cut to this rank's block of `axis` (a size-1 broadcast axis stays whole)."""
        x = self.replicated(n)
        if sm.sym(x.shape[axis]) is sm.ONE:
            return x
        lo, hi = self._block(x.shape[axis])
        return g.apply_view(x, lambda v: v.slice(axis, lo, hi))

    # ---------------------------------------------------------------- rules
    def leaf(self, n: Node) -> tuple:
        axis = self.specs.get(n)
        if axis is None or self.world == 1:
            return n, R
        axis = axis + len(n.shape) if axis < 0 else axis
        lo, hi = self._block(n.shape[axis])
        if n.op == g.DATA:
            arr = np.take(n.arg.array, np.arange(lo, hi), axis=axis)
            return g.data_node(np.ascontiguousarray(arr), f"{n.arg.name}.shard{self.rank}", n.dtype), S(axis)
        if n.op == g.INPUT:
            shape = tuple(hi - lo if d == axis else s for d, s in enumerate(n.shape))
            return g.input_node(n.arg, shape, n.dtype), S(axis)
        raise AssertionError(n.op)  # pragma: no cover (checked by shard_graph)

    def _current(self, n: Node) -> tuple:
        """(local node, layout) of n, where n already made whole for another consumer is read whole:
        a partial sum kept partial would be reduced again later, larger; a split value kept split
        would be gathered again further on (argmax's max, then its comparisons, of split logits)."""
        x, lay = self.local[n]
        return (self.whole[n], R) if n in self.whole else (x, lay)

    def elementwise(self, n: Node) -> tuple:
        for s in n.srcs:
            self.local[s] = self._current(s)
        lays = [self.local[s][1] for s in n.srcs]
        if P in lays:
            linear = (n.op == g.ADD and all(la == P for la in lays)) or \
                (n.op == g.MUL and sorted(lays) == sorted([P, R]))
            if linear:
                return self._rebuild(n, [self.local[s][0] for s in n.srcs]), P
        split = next((la[1] for la in lays if la[0] == "S"), None)
        if split is None or n.op == g.PHILOX:
            return self._rebuild(n, [self.replicated(s) for s in n.srcs]), R
        srcs = [self.local[s][0] if self.local[s][1] == S(split) else self.sliced(s, split) for s in n.srcs]
        return self._rebuild(n, srcs), S(split)

    def reduce(self, n: Node) -> tuple:
        x, lay = self.local[n.srcs[0]] = self._current(n.srcs[0])
        if lay == P and n.op == g.SUM:
            return self._rebuild(n, [x]), P
        if lay[0] == "S" and (lay[1] not in n.arg or n.op == g.SUM):
            return self._rebuild(n, [x]), (P if lay[1] in n.arg else lay)
        return self._rebuild(n, [self.replicated(n.srcs[0])]), R

    def view(self, n: Node) -> tuple:
        src = n.srcs[0]
        x, lay = self.local[src] = self._current(src)
        if lay[0] == "S":
            moved = _local_view(n.arg, src.shape, lay[1], self.rank, self.world, self.bounds)
            if moved is not None:
                b, local_view = moved
                return g.view_node(x, local_view), S(b)
        if lay == P and n.arg.valid is sm.ONE:  # an unmasked view of a sum is the sum of the views
            return g.view_node(x, n.arg), P
        return g.view_node(self.replicated(src), n.arg), R

    def gather(self, n: Node) -> tuple:
        """A gather from a table split along axis 0 (a vocab-split embedding): rank r's rows are one
        contiguous run of the flat table, so each rank gathers the positions inside its run, zero
        elsewhere, and the sum over the ranks is the gather."""
        from .tensor import Tensor, where
        data = self.local[n.srcs[0]][0]
        size = sm.sym(sm.prod(data.shape))
        if not size.is_const:
            return self._rebuild(n, [self.replicated(s) for s in n.srcs]), R
        index = Tensor(self.replicated(n.srcs[1]))
        local = index - self.rank * size.value
        inside = (local >= 0) & (local < size.value)
        rows = Tensor(g.gather_node(data, where(inside, local, 0).cast(index.dtype).node))
        return where(inside, rows, 0).cast(n.dtype).node, P

    def _rebuild(self, n: Node, srcs: list) -> Node:
        if n.op in g.REDUCE:
            shape = tuple(sm.ONE if d in n.arg else s for d, s in enumerate(srcs[0].shape))
        elif srcs and (n.op in g.ELEMENTWISE or n.op == g.PHILOX):
            shape = srcs[0].shape
        else:
            shape = n.shape
        return Node(n.op, tuple(srcs), n.arg, n.dtype, shape)

    def node(self, n: Node) -> tuple:
        if n.op in g.LEAVES:
            return self.leaf(n)
        if n.op == g.COLLECTIVE:
            raise GraphError("the graph to shard already has collectives: annotate the unsharded graph instead")
        if n.op == g.VIEW:
            return self.view(n)
        if n.op in g.REDUCE:
            return self.reduce(n)
        if n.op in g.ELEMENTWISE or n.op == g.PHILOX:
            return self.elementwise(n)
        if n.op == g.GATHER and self.local[n.srcs[0]][1] == S(0):
            return self.gather(n)
        return self._rebuild(n, [self.replicated(s) for s in n.srcs]), R  # gather and anything new


def _local_view(v: View, src_shape: tuple, a: int, rank: int, world: int, bounds: dict | None = None):
    """(output axis b, this rank's view) when block r of some output axis b reads only block r of
    input axis a, for every rank r — proved by the symbolic simplifier's bounds on the input
    coordinate a recovered from the flat index ((index // stride) % size) with i_b shifted to block r;
    None when no axis can be proved (the caller gathers). The rank's view is the same coordinates
    re-flattened with the rank's strides: permutes, broadcasts, slices of other axes, reshapes
    splitting a or merging it with inner axes all come out this way."""
    n_a = sm.sym(src_shape[a])
    if not n_a.is_const:
        return None
    blk_a = n_a.value // world
    src_strides = row_major_strides(src_shape)
    local_src = list(src_shape)
    local_src[a] = sm.sym(blk_a)
    local_strides = row_major_strides(local_src)

    grouped = _affine_coords(v, src_strides) if v.valid is not sm.ONE else None
    if v.valid is not sm.ONE and grouped is None:
        return None

    def coords(b: int, r: int, blk_b: int) -> tuple:
        shifted = {index_name(b): sm.index_var(index_name(b), blk_b) + r * blk_b}
        if grouped is not None:
            cs = [sm.substitute(c, shifted) for c in grouped]
        else:
            index = sm.substitute(v.index, shifted)
            cs = [index // st if d == 0 else (index // st) % src_shape[d] for d, st in enumerate(src_strides)]
        cs[a] = cs[a] - r * blk_a
        return cs, sm.substitute(v.valid, shifted)

    for b, size in enumerate(v.shape):
        size = sm.sym(size)
        if not size.is_const or size.value % world or size.value < world:
            continue
        blk_b = size.value // world
        if all(0 <= c.vmin and c.vmax < blk_a for c in (_within_mask(coords(b, r, blk_b)[0][a], v, b, bounds)
                                                        for r in range(world))):
            cs, valid = coords(b, rank, blk_b)
            shape = list(v.shape)
            shape[b] = sm.sym(blk_b)
            return b, View(tuple(shape), sm.sum_of([st * c for st, c in zip(local_strides, cs)]), valid)
    return None


def _affine_coords(v: View, src_strides: list):
    """The input coordinates of a masked view (a pad, a placement at a named offset, a concatenation)
    as sums of the index's terms, each term given to the largest input stride dividing it. At
    masked positions the flat index may leave the buffer and borrow across axes, so
    `(index // stride) % size` would mix axes there; the terms, each from one per-axis movement op,
    do not (at valid positions they are the coordinates). None when a term divides by no stride."""
    index = sm.sym(v.index)
    if index.op == "add":
        terms = [sm.sym(index.args[0])] + [t * c for t, c in index.args[1]]
    else:
        terms = [index]
    cs = [sm.ZERO] * len(src_strides)
    for t in terms:
        if t is sm.ZERO:
            continue
        d = next((d for d, st in enumerate(src_strides) if (t // st) * st is t), None)
        if d is None:
            return None
        cs[d] = cs[d] + t // src_strides[d]
    return cs


def _within_mask(c, v: View, b: int, bounds: dict | None):
    """Coordinate expression c with each index var other than the shifted b's narrowed to the range
    the view's mask allows (masked positions are never read), and each named dim to its bound."""
    sub = {name: sm.index_var(name, hi - lo) + lo for name, (lo, hi) in _mask_ranges(v.valid).items()
           if name != index_name(b) and hi > lo} if v.valid is not sm.ONE else {}
    named = {k: top for k, top in (bounds or {}).items() if isinstance(k, str)}
    spans = {k: top for k, top in (bounds or {}).items() if not isinstance(k, str)}  # extents: {P + T: 4096}
    for d, extent in enumerate(v.shape):
        if d != b and extent in spans and index_name(d) not in sub:
            sub[index_name(d)] = sm.index_var(index_name(d), spans[extent])
    sub.update({name: sm.index_var(name, bound + 1) for name, bound in named.items()})
    return sm.substitute(c, sub) if sub else c


def _mask_ranges(valid) -> dict:
    """{index var name: (lo, hi)} implied by a mask made of `k < var`, `var < k` conjunctions (what
    pads and concatenations build): the only positions whose coordinates must be in range."""
    out: dict = {}
    parts = list(valid.args) if getattr(valid, "op", None) == "and" else [valid]
    for c in parts:
        if getattr(c, "op", None) != "lt":
            continue
        a, b = (sm.sym(x) for x in c.args)
        var, lo_k, hi_k = (b, a.value + 1, None) if a.is_const and b.op == "var" else \
            (a, None, b.value) if b.is_const and a.op == "var" else (None, None, None)
        if var is None or not math.isfinite(var.vmax):  # (an extent only known at run time: left alone)
            continue
        lo, hi = out.get(var.args[0], (0, int(var.vmax) + 1))
        out[var.args[0]] = (lo if lo_k is None else max(lo, lo_k), hi if hi_k is None else min(hi, hi_k))
    return out


def shard_graph(outputs: list, specs: dict, rank: int, world: int, keep_outputs=False,
                dim_bounds: dict | None = None) -> tuple:
    """This rank's graph of `outputs` (global nodes or Tensors) with the leaves in `specs` ({node or
    Tensor: axis}) split
    over `world` ranks. Returns (local output nodes, their layouts, the number of collectives
    inserted). The outputs are made replicated, except those in `keep_outputs` (True: all), which
    keep their layout (a KV cache written in place stays split). `dim_bounds` ({name: largest
    value}, or {extent expression: largest extent}) lets views over named dims be proved to stay in a
    rank's block (a cache read to P + T <= its length)."""
    outputs = [getattr(o, "node", o) for o in outputs]  # (Tensors or nodes)
    specs = {getattr(k, "node", k): a for k, a in specs.items()}
    if not 0 <= rank < world:
        raise GraphError(f"rank {rank} is outside a world of {world}")
    order = g.toposort(outputs)
    for n, axis in specs.items():
        if n.op not in (g.DATA, g.INPUT):
            raise GraphError(f"only constants and inputs can be annotated with a sharding, not a {n.op} node")
        if not -len(n.shape) <= axis < len(n.shape):
            raise GraphError(f"sharding axis {axis} out of range for a tensor of rank {len(n.shape)}")
    sh = Sharder(specs, rank, world, dim_bounds)
    for n in order:
        sh.local[n] = sh.node(n)
    keep = set(outputs) if keep_outputs is True else {getattr(o, "node", o) for o in (keep_outputs or ())}
    local = [sh.local[o][0] if o in keep else sh.replicated(o) for o in outputs]
    return local, [sh.local[o][1] if o in keep else R for o in outputs], sh.collectives
