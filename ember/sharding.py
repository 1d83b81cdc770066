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
gather, philox, leaves      sources made R
==========================  ====================================================================

Making a source R: S(a) -> all_gather along a; P -> all_reduce. The graph's outputs are made R, so
every rank returns the whole value (or, with ``keep_outputs=True``, its own layout).
"""
from __future__ import annotations

import numpy as np

from . import graph as g
from . import symbolic as sm
from .graph import Node
from .primitives import GraphError
from .view import View, index_vars, row_major_strides

R, P = ("R",), ("P",)


def S(axis: int) -> tuple:
    return ("S", axis)


class Sharder:
    """One rank's translation of a global graph (see the module docstring)."""

    def __init__(self, specs: dict, rank: int, world: int):
        self.specs, self.rank, self.world = specs, rank, world
        self.local: dict = {}  # global node -> (local node, layout)
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
        self.collectives += 1
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

    def elementwise(self, n: Node) -> tuple:
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
        x, lay = self.local[n.srcs[0]]
        if lay == P and n.op == g.SUM:
            return self._rebuild(n, [x]), P
        if lay[0] == "S" and (lay[1] not in n.arg or n.op == g.SUM):
            return self._rebuild(n, [x]), (P if lay[1] in n.arg else lay)
        return self._rebuild(n, [self.replicated(n.srcs[0])]), R

    def view(self, n: Node) -> tuple:
        src = n.srcs[0]
        x, lay = self.local[src]
        if lay[0] == "S":
            moved = _split_view(n.arg, src.shape, lay[1], self.world)
            if moved is not None:
                b, local_view = moved
                return g.view_node(x, local_view), S(b)
        if lay == P and n.arg.valid is sm.ONE:  # an unmasked view of a sum is the sum of the views
            return g.view_node(x, n.arg), P
        return g.view_node(self.replicated(src), n.arg), R

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
        return self._rebuild(n, [self.replicated(s) for s in n.srcs]), R  # gather and anything new


def _split_view(v: View, src_shape: tuple, a: int, world: int):
    """(output axis b, the view rebuilt for the rank's shapes) when the view reads input axis a whole
    through one run of consecutive output axes (one axis: a permute, a broadcast; several: a reshape
    splitting a, whose outermost axis b must then split over the ranks), and the other axes affinely;
    None otherwise (the caller gathers)."""
    if v.valid is not sm.ONE:
        return None
    aff = v.affine_strides()
    if aff is None:
        return _merged_view(v, src_shape, a, world)
    offset, strides = aff
    src_strides = row_major_strides(src_shape)
    nd = len(strides)
    owner: list = [None] * nd  # input axis each output axis reads (None: broadcast)
    mult: list = [sm.ONE] * nd  # its stride in units of that input axis's stride
    for d in reversed(range(len(src_shape))):  # innermost input axis first: each claims its run
        if sm.sym(src_shape[d]) is sm.ONE:
            continue
        acc = sm.ONE
        while acc is not src_shape[d]:
            b = next((b for b in range(nd) if owner[b] is None and strides[b] is not sm.ZERO
                      and strides[b] is src_strides[d] * acc), None)
            if b is None:
                break
            owner[b], mult[b] = d, acc
            acc = acc * v.shape[b]
    if any(o is None and s is not sm.ZERO for o, s in zip(owner, strides)):
        return None
    bs = [b for b, d in enumerate(owner) if d == a]
    if not bs or sm.prod([v.shape[b] for b in bs]) is not src_shape[a]:  # a read whole, once
        return None
    if not all(mult[c].is_const for c in bs):
        return None
    b = max(bs, key=lambda c: mult[c].value)  # the run's outermost axis: the ranks split it
    outer = sm.sym(v.shape[b])
    if not outer.is_const or outer.value % world:
        return None
    starts = [offset // st if d == 0 else (offset // st) % src_shape[d] for d, st in enumerate(src_strides)]
    if starts[a] is not sm.ZERO:
        return None
    local_src = list(src_shape)
    local_src[a] = src_shape[a] // world
    local_strides = row_major_strides(local_src)
    shape = list(v.shape)
    shape[b] = sm.sym(outer.value // world)
    iv = index_vars(shape)
    index = sm.sum_of([local_strides[d] * starts[d] for d in range(len(local_src))] +
                      [local_strides[d] * m * i for d, m, i in zip(owner, mult, iv) if d is not None])
    return b, View(tuple(shape), index, sm.ONE)


def _merged_view(v: View, src_shape: tuple, a: int, world: int):
    """The non-affine case: a reshape merging input axis a with inner axes into one output axis b
    (attention's heads back into the model width). Each input coordinate is recovered from the flat
    index as (index // stride) % size; a's must be i_b or i_b // K with b of length size_a * K, and
    i_b may appear elsewhere only as i_b % K: then rank r's block of b is its block of a, and the
    same coordinate expressions, over the rank's shapes, are the local view."""
    src_strides = row_major_strides(src_shape)
    coords = [v.index // st if d == 0 else (v.index // st) % src_shape[d] for d, st in enumerate(src_strides)]
    c = coords[a]
    names = sorted(sm.free_vars(c))
    if len(names) != 1:
        return None
    b = int(names[0][2:])
    ib = index_vars(v.shape)[b]
    if c is ib:
        K = sm.ONE
    elif c.op == "div" and c.args[0] is ib and sm.sym(c.args[1]).is_const:
        K = sm.sym(c.args[1])
    else:
        return None
    if v.shape[b] is not src_shape[a] * K:
        return None
    for d, cd in enumerate(coords):
        if d != a and names[0] in sm.free_vars(cd) and cd is not ib % K:
            return None
    shape = list(v.shape)
    shape[b] = sm.sym(src_shape[a] // world) * K
    local_src = list(src_shape)
    local_src[a] = src_shape[a] // world
    new_ib = index_vars(shape)[b]
    local = [sm.substitute(cd, {names[0]: new_ib}) for cd in coords]
    index = sm.sum_of([st * cd for st, cd in zip(row_major_strides(local_src), local)])
    return b, View(tuple(shape), index, sm.ONE)


def shard_graph(outputs: list, specs: dict, rank: int, world: int, keep_outputs: bool = False) -> tuple:
    """This rank's graph of `outputs` (global nodes or Tensors) with the leaves in `specs` ({node or
    Tensor: axis}) split
    over `world` ranks. Returns (local output nodes, their layouts, the number of collectives
    inserted). The outputs are made replicated unless keep_outputs."""
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
    sh = Sharder(specs, rank, world)
    for n in order:
        sh.local[n] = sh.node(n)
    if keep_outputs:
        return [sh.local[o][0] for o in outputs], [sh.local[o][1] for o in outputs], sh.collectives
    return [sh.replicated(o) for o in outputs], [R] * len(outputs), sh.collectives
