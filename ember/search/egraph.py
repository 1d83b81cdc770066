"""Structure search: the graph in an e-graph (egglog), rewrite rules applied under explicit budgets,
many distinct candidate graphs extracted from egglog's frozen table.

Encoding. Each graph node becomes a term of the sort `H`. Views, reduction axes, shapes and leaves
(inputs, weights, iotas) are opaque integer ids into Python-side tables, so rules can move them around
but never need to build new index arithmetic: a broadcast scalar constant is its own term
(`scalar(value, shape, dtype)`), so constant folding and hoisting a scale out of a reduction are plain
egglog rules; the shape of a reduction's result is a table function `reduced(shape, axes)` filled from
Python. `mat(x)` marks x as materialised (its own kernel's output): it is equal to x, so choosing it or
not is an extraction choice — kernel boundaries are searched like any other rewrite.

Budgets (stated here, enforced in `saturate` and `candidates`): at most MAX_ITERS rule iterations and
MAX_ENODES e-nodes per region; extraction samples at most `n` distinct candidates. Under a search's
time limit the rules stop iterating once SATURATE_SHARE of it is spent and sampling stops at
SAMPLE_SHARE, so the candidates found by then still get their time to be lowered, verified and timed.
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..graph import Node
from ..view import View
from . import rules as rl
from .terms import egglog_sort

MAX_ITERS = 6
MAX_ENODES = 20000
MAX_DEPTH = 400
SATURATE_SHARE = 0.4  # of a search's time limit, at most, before the rules stop iterating
SAMPLE_SHARE = 0.6  # ... and before extraction stops sampling


class Tables:
    """Python-side meaning of the opaque ids in terms."""

    def __init__(self):
        self.leaves: list = []
        self.shapes: list = []
        self.views: list = []
        self.axes: list = []
        self._ids: dict = {}

    def _id(self, table: list, kind: str, v, key=None) -> int:
        k = (kind, v if key is None else key)
        i = self._ids.get(k)
        if i is None:
            i = self._ids[k] = len(table)
            table.append(v)
        return i

    def leaf(self, n: Node) -> int:
        return self._id(self.leaves, "leaf", n)

    def shape(self, s: tuple) -> int:
        return self._id(self.shapes, "shape", s)

    def view(self, v: View) -> int:
        return self._id(self.views, "view", v)

    def axes_id(self, a: tuple) -> int:
        # a TF32-marked tuple equals the plain one: key by the interning key, or a float32 sum could
        # decode as a TF32 one (ember/precision.py)
        return self._id(self.axes, "axes", a, g._arg_key(a))


def _scalar_of(n: Node):
    """(value, dtype) if n is a scalar constant broadcast to its shape."""
    if n.op == g.CONST:
        return n.arg, n.dtype
    if n.op == g.VIEW and n.srcs[0].op == g.CONST and n.arg.index is sm.ZERO and n.arg.valid is sm.ONE:
        return n.srcs[0].arg, n.dtype
    return None


class Encoder:
    def __init__(self, tables: Tables):
        self.t = tables
        self.H, self.reduced = egglog_sort()
        self.memo: dict = {}
        self.facts: list = []

    def encode(self, n: Node):
        if n in self.memo:
            return self.memo[n]
        H = self.H
        sc = _scalar_of(n)
        if sc is not None:
            e = H.scalar(float(sc[0]), self.t.shape(n.shape), sc[1].name)
        elif n.op in (g.INPUT, g.DATA, g.IOTA, g.CONST):
            e = H.leaf(self.t.leaf(n))
        elif n.op in g.UNARY:
            e = H.unary(n.op, self.encode(n.srcs[0]))
        elif n.op in g.BINARY:
            e = H.binary(n.op, self.encode(n.srcs[0]), self.encode(n.srcs[1]))
        elif n.op == g.WHERE:
            e = H.where(*(self.encode(s) for s in n.srcs))
        elif n.op in g.REDUCE:
            ax = self.t.axes_id(n.arg)
            e = H.reduce(n.op, ax, self.encode(n.srcs[0]))
            from egglog import i64, set_
            self.facts.append(set_(self.reduced(self.t.shape(n.srcs[0].shape), ax)).to(i64(self.t.shape(n.shape))))
        elif n.op == g.VIEW:
            e = H.view(self.t.view(n.arg), self.encode(n.srcs[0]))
        elif n.op == g.GATHER:
            e = H.gather(self.encode(n.srcs[0]), self.encode(n.srcs[1]))
        elif n.op == g.CAST:
            e = H.cast(n.dtype.name, self.encode(n.srcs[0]))
        else:  # pragma: no cover
            raise AssertionError(n.op)
        self.memo[n] = e
        return e


# ------------------------------------------------------------------------------------------------
# decoding sampled terms back to graph nodes


class Decoder:
    """Graph nodes from an extracted term DAG: `terms[i]` is (op, *args), its sub-terms given by
    their index in `terms` (a term shared by several parents is one entry, decoded once)."""

    def __init__(self, tables: Tables, terms: list):
        self.t = tables
        self.terms = terms
        self.memo: dict = {}
        self.forced: set = set()

    def node(self, tid: int) -> Node:
        hit = self.memo.get(tid)
        if hit is not None:
            return hit
        term = self.terms[tid]
        op, args = term[0], term[1:]
        t = self.t
        if op == "leaf":
            n = t.leaves[args[0]]
        elif op == "scalar":
            value, shape, dtype = args
            d = dt.as_dtype(dtype)
            shp = t.shapes[shape]
            c = g.const_node(value if d.is_float else (bool(value) if d.is_bool else int(value)), d)
            n = c if not shp else g.apply_view(c, lambda v: v.reshape((1,) * len(shp)).expand(shp))
        elif op == "unary":
            n = g.unary(args[0], self.node(args[1]))
        elif op == "binary":
            n = g.binary(args[0], self.node(args[1]), self.node(args[2]))
        elif op == "where":
            n = g.where_node(*(self.node(a) for a in args))
        elif op == "reduce":
            axes = t.axes[args[1]]
            n = g.reduce_node(args[0], self.node(args[2]), axes, tf32=isinstance(axes, g.TF32Axes))
        elif op == "view":
            n = g.view_node(self.node(args[1]), t.views[args[0]])
        elif op == "gather":
            n = g.gather_node(self.node(args[0]), self.node(args[1]))
        elif op == "cast":
            n = g.cast_node(self.node(args[1]), dt.as_dtype(args[0]))
        elif op == "mat":
            n = self.node(args[0])
            if n.op not in (g.INPUT, g.DATA, g.CONST):
                self.forced.add(n)
        else:  # pragma: no cover
            raise AssertionError(op)
        self.memo[tid] = n
        return n


# ------------------------------------------------------------------------------------------------
# the e-graph of one region


class Region:
    """An e-graph holding a graph's outputs, the rules applied, and a sampler over its frozen table."""

    def __init__(self, outputs: list, rules=None, split_policy=None):
        from egglog import EGraph
        self.outputs = outputs
        self.tables = Tables()
        self.enc = Encoder(self.tables)
        self.egraph = EGraph()
        self.roots = [self.egraph.let(f"o{i}", self.enc.encode(o)) for i, o in enumerate(outputs)]
        self.rules = rl.RULES if rules is None else rules
        for r in self.rules:
            if r.expand is not None:
                for lhs, rhs in r.expand(outputs, split_policy):
                    from egglog import union
                    self.egraph.register(union(self.enc.encode(lhs)).with_(self.enc.encode(rhs)))
        if self.enc.facts:
            self.egraph.register(*self.enc.facts)
        self.iterations = 0

    def size(self) -> int:
        return sum(n for _, n in self.egraph.all_function_sizes())

    def saturate(self, max_iters: int = MAX_ITERS, max_enodes: int = MAX_ENODES, until=None) -> int:
        """Run the rules until nothing changes or a budget is spent; `until()` true stops it
        between iterations (a search's clock)."""
        from egglog import ruleset
        cmds = [c for r in self.rules if r.egglog is not None for c in r.egglog(*egglog_sort())]
        if not cmds:
            return self.size()
        rs = ruleset(*cmds)
        for _ in range(max_iters):
            report = self.egraph.run(rs * 1)
            self.iterations += 1
            if self.size() > max_enodes or not report.updated or (until is not None and until()):
                break
        return self.size()

    # -------------------------------------------------------------- extraction over the frozen table
    def _table(self):
        raw = self.egraph._egraph
        fr = raw.freeze()
        conv = {"i64": raw.value_to_i64, "f64": raw.value_to_f64, "String": raw.value_to_string}
        classes: dict = defaultdict(list)
        roots: dict = {}
        for name, f in fr.functions.items():
            if f.is_let_binding:
                if f.rows:
                    roots[name.lstrip("$")] = f.rows[0].output
                continue
            if "_H_" not in name:
                continue
            op = name.rsplit("_H_", 1)[1]
            for r in f.rows:
                if r.subsumed:
                    continue
                args = tuple(("lit", conv[t](v)) if t in conv else ("cls", v) for t, v in zip(f.input_sorts, r.inputs))
                classes[r.output].append((op, args))
        return classes, roots

    def candidates(self, n: int, seed: int = 0, until=None) -> list:
        """Up to n distinct (outputs, forced-materialised nodes) decoded from the e-graph: the
        smallest term first, then random samples (cost-guided, cycle-safe); `until()` true stops
        the sampling with what it has."""
        classes, roots = self._table()
        cost = {c: math.inf for c in classes}
        best: dict = {}
        changed = True
        while changed:
            changed = False
            for c, nodes in classes.items():
                for nd in nodes:
                    s = 1 + sum(cost[a[1]] for a in nd[1] if a[0] == "cls")
                    if nd[0] == "mat":
                        s += 1
                    if s < cost[c]:
                        cost[c], best[c] = s, nd
                        changed = True
        rng = np.random.default_rng(seed)
        # per class, the nodes whose class arguments all have a finite cost, with those arguments as a
        # set: a sample filters them by its path (cycle safety) with one set test a node — classes a
        # wrong or expansive rule merges can hold tens of thousands of nodes
        finite: dict = {}

        def finite_nodes(c) -> list:
            hit = finite.get(c)
            if hit is None:
                hit = finite[c] = [(nd, frozenset(a[1] for a in nd[1] if a[0] == "cls")) for nd in classes[c]
                                   if all(a[0] == "lit" or cost[a[1]] < math.inf for a in nd[1])]
            return hit

        def sample(all_greedy: bool):
            """One extraction as a DAG: each e-class decoded once per sample (one choice per class,
            so a subterm shared by several parents is shared in the result; a tree walk was
            exponential in a ResNet's residual joins) into `terms` (op, *args; sub-terms by index)."""
            terms: list = []
            index: dict = {}
            memo: dict = {}

            def term(c, greedy: bool, path: frozenset, depth: int) -> int:
                hit = memo.get(c)
                if hit is not None:
                    return hit
                opts = [] if greedy or depth > MAX_DEPTH else [nd for nd, args in finite_nodes(c) if path.isdisjoint(args)]
                if not opts:
                    nd = best[c]
                else:
                    nd = opts[rng.integers(len(opts))] if rng.random() < 0.35 else best[c]
                    if nd is best[c] and not path.isdisjoint(a[1] for a in nd[1] if a[0] == "cls"):
                        nd = opts[0]  # the cheapest node closes a cycle through this sample's path
                p2 = path | {c}
                key = (nd[0],) + tuple(a[1] if a[0] == "lit" else term(a[1], greedy or a[1] in p2, p2, depth + 1)
                                       for a in nd[1])
                tid = index.get(key)
                if tid is None:
                    tid = index[key] = len(terms)
                    terms.append(key)
                memo[c] = tid
                return tid
            return [term(roots[f"o{k}"], all_greedy, frozenset(), 0) for k in range(len(self.outputs))], terms

        out, seen = [], set()
        for i in range(n * 4):
            if len(out) >= n or (i and until is not None and until()):
                break
            try:
                tids, terms = sample(i == 0)
                dec = Decoder(self.tables, terms)
                nodes = [dec.node(t) for t in tids]
            except (g.GraphError, ValueError, KeyError, RecursionError):
                continue  # a sample whose shapes do not fit together is not a candidate
            key = (tuple(x.key for x in nodes), tuple(sorted(x.key for x in dec.forced)))
            if key in seen:
                continue
            seen.add(key)
            out.append(Candidate(nodes, frozenset(dec.forced)))
        return out


class Candidate(list):
    """Output nodes of one structure candidate, with the nodes it forces to be materialised and
    whether it lowers with kernel-local arrays (intermediates kept on chip)."""

    def __init__(self, nodes, forced=frozenset(), local: bool = False):
        super().__init__(nodes)
        self.forced = forced
        self.local = local


def _uses_locals(outputs: list) -> bool:
    from ..kernel.lower import lower
    try:
        return any(k.meta.get("locals") for k, _ in lower(list(outputs), local=True).kernels)
    except Exception:
        return False


def structure_candidates(outputs: list, n: int, budget=None, split_policy=None) -> list:
    """The original graph first; the same graph lowered with kernel-local arrays when that changes
    anything; then distinct rewritten graphs from the e-graph (none when egglog is absent). The
    split-reduction rule uses `split_policy` (the Target's) for its thresholds."""
    first = Candidate(list(outputs))
    if n <= 1:
        return [first]
    if _uses_locals(outputs):
        first = [first, Candidate(list(outputs), local=True)]
    else:
        first = [first]
    try:
        region = Region(outputs, split_policy=split_policy)
    except ImportError:
        return first
    def spent(share: float):
        return None if budget is None else (lambda: budget.left() < budget.seconds * (1.0 - share))
    region.saturate(until=spent(SATURATE_SHARE))
    cands = [c for c in region.candidates(n, until=spent(SAMPLE_SHARE)) if list(c) != list(outputs) or c.forced]
    return first + cands[: max(n - len(first), 0)]
