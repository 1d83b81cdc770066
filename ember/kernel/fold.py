"""Constant folding: small subgraphs that read only the program's constants are computed once, at
compile time, by the reference interpreter, and become constants themselves.

An imported model's weights are constants (DATA nodes), and a model in eval mode computes things
from them alone on every call: BatchNorm's 1 / sqrt(var + eps) per channel, a negated mean, a
scaled bias. Lowered as they are, those operations run per output element inside the fused
kernel (a square root and a division for each of ResNet-18's 800k stem activations). Folded, the
kernel reads one precomputed value per channel.

Only nodes with a static shape of at most FOLD_MAX elements fold (a broadcast of a constant to a
large shape stays a view: folding it would store the large array), computed in float64 by the
reference and stored in the node's dtype — the value the reference, Ember's oracle, defines.
Random draws never fold. Nor does integer index arithmetic over index patterns and scalars alone
(`iota * stride + c`, a comparison of two iotas): a kernel computes it from its indices for free,
where a folded table costs a dependent load — an embedding's column `arange(D)` folded into a
table put a third load in the chain of every rotary lookup (position -> column -> cos).
"""
from __future__ import annotations

from .. import dtypes as dt
from .. import graph as g
from .node_args import iota_expr

FOLD_MAX = 1 << 16  # elements of a folded node
SOURCE_MAX = 1 << 22  # elements its constant inputs may have (compile-time cost)
LEAVES = (g.DATA, g.CONST, g.IOTA)
NEVER = ("philox", "collective")  # random draws: a fresh value per call; collectives: run by every rank


def _static_numel(n: g.Node):
    return n.numel.value if n.numel.is_const else None


def _static_iota(n: g.Node) -> bool:
    """An index pattern that names no run-time dimension (its value is known at compile time)."""
    from .. import symbolic as sm
    from ..view import index_name
    own = {index_name(d) for d in range(len(n.shape))}
    return _static_numel(n) is not None and sm.free_vars(iota_expr(n)) <= own


def _index_arithmetic(m: g.Node, index_only: set) -> bool:
    """An integer or boolean elementwise function of index patterns and scalar constants only."""
    return (m.dtype.is_int or m.dtype == dt.bool_) and m.op in g.ELEMENTWISE + (g.VIEW,) and all(s in index_only for s in m.srcs)


def fold_constants(outputs: list) -> list:
    """The graph with every small all-constant computation replaced by its value (a DATA node);
    the same nodes where there is none."""
    from ..reference import evaluate
    order = g.toposort(outputs)
    keep = set(outputs)  # an output stays computed by a kernel
    const: set = set()
    index_only: set = set()  # index patterns, scalars, and integer arithmetic over them alone
    new: dict = {}
    for n in order:
        srcs = tuple(new.get(s, s) for s in n.srcs)
        m = n if srcs == n.srcs else g.Node(n.op, srcs, n.arg, n.dtype, n.shape)
        if m.op in LEAVES:
            if m.op != g.IOTA or _static_iota(m):
                const.add(m)
            if m.op == g.IOTA or (m.op == g.CONST and _static_numel(m) == 1):
                index_only.add(m)
        elif m.srcs and n not in keep and all(s in const for s in m.srcs) and m.op not in NEVER:
            numel = _static_numel(m)
            indexed = _index_arithmetic(m, index_only)
            if m.op == g.VIEW or indexed:  # free: a view, or computed from indices
                const.add(m)
                if indexed:
                    index_only.add(m)
            elif numel is not None and numel <= FOLD_MAX and \
                    sum(_static_numel(s) or SOURCE_MAX for s in m.srcs) <= SOURCE_MAX:
                value, = evaluate([m], {}, {})
                m = g.data_node(value.astype(m.dtype.np).reshape([d.value for d in m.shape]), dtype=m.dtype)
                const.add(m)
        new[n] = m
    return [new[o] for o in outputs]
