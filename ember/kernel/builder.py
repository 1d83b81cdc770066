"""KernelBuilder: lowers one materialised node (a kernel's root) and everything inlined into it to the
kernel IR, and analyses the kernel for the materialisation rules it applies (rules 2-6 and 8 of kernel/
partition.py's docstring: stages, kernel-local arrays; rule 4's cost model and exceptions: kernel/recompute.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Container

from .. import dtypes as dt, graph as g, symbolic as sm
from ..graph import Node
from ..symbolic import Expr
from ..view import View, index_name, row_major_strides
from . import ir
from .contraction import is_contraction
from .node_args import expands, iota_expr, reduce_axes, view_of
from .operand_order import ordered
from .recompute import ENABLED as RECOMPUTE, few_row_recompute, inline_cost, reads_reduction, split_invariant_factor
from .recompute import broadcast_read
from .scan import masked_short_sum

# rule 3 also materialises a reduction whose every result would be recomputed this many times by
# the kernel's parallel points (its coordinates coarser than the kernel's loops)
REDUNDANT_MIN = 2
RECOMPUTE_LIMIT = 4  # ALU ops an inlined producer read through a broadcast (a view >= 2x its size, not a pad) may cost
SCAN_INLINE_MAX = 32  # ... or, read by a masked short sum (a scan), before it is stored
# rule 8: an inlined expression nested deeper than this (a chain of thousands of elementwise ops,
# each read once) is cut there: the lowering walks expressions recursively, ~4 Python frames a level,
# and such a chain raised RecursionError (Python's default limit is 1000 frames)
INLINE_DEPTH_MAX = 150


def _splits_dims(e: Expr) -> bool:
    """Whether a coordinate divides or takes the remainder of a loop variable (the reader sees the
    producer through a view that interleaves or merges its dimensions)."""
    if e.op in ("div", "mod") and sm.free_vars(e):
        return True
    return any(isinstance(a, Expr) and _splits_dims(a) for a in e.args)


def acc_dtype(d: dt.DType) -> dt.DType:
    if d.is_float:
        return dt.float64 if d == dt.float64 else dt.float32
    if d.is_bool:
        return dt.int32
    return d


def flat_index(coords, shape) -> Expr:
    return sm.sum_of(c * s for c, s in zip(coords, row_major_strides(shape)))


def unflatten(flat: Expr, shape) -> tuple:
    out = []
    for d, st in enumerate(row_major_strides(shape)):
        c = flat // st
        out.append(c if d == 0 else c % shape[d])
    return tuple(out)


def _guard_within(valid: Expr, allowed: set) -> Expr:
    """The conjuncts of a load guard that use only `allowed` variables. A stage is hoisted to the
    loops its coordinates depend on; a conjunct over another output variable (a pad after a keepdim
    reduction: `0 < o1`) only says where the consumer uses the result, which its own `where` keeps,
    and it cannot guard the stage's coordinates, which do not depend on that variable."""
    parts = valid.args if valid.op == "and" else (valid,)
    kept = [c for c in parts if sm.free_vars(c) <= allowed]
    if len(kept) == len(parts):
        return valid
    out = sm.ONE
    for c in kept:
        out = sm.logical_and(out, c)
    return out


def _view_coords(v: View, coords: tuple) -> tuple[Expr, Expr]:
    """(flat source index, validity) of view v read at `coords`."""
    m = {index_name(d): c for d, c in enumerate(coords)}
    flat = sm.substitute(v.index, m)
    valid = sm.substitute(v.valid, m)
    return flat, valid


@dataclass
class Stage:
    node: Node
    coords: tuple
    acc: str
    op: str
    dtype: dt.DType
    rvars: list  # (name, extent)
    update: ir.Val | None = None
    deps: frozenset = frozenset()
    tf32: bool = False  # the SUM was marked for TF32 products (ember/precision.py)
    scale: ir.Val | None = None  # a factor of every update taken out of the loop (kernel/recompute.py)


@dataclass
class LocalStage:
    """A row of values computed once per outer point into a kernel-local array, indexed by a loop
    variable that would otherwise have forced a materialisation (attention scores and
    probabilities: the scores stay on chip)."""
    node: Node
    name: str
    var: str
    extent: int
    dtype: dt.DType
    inner: Stage | None  # a reduction computed per entry (the scores' dot products)
    value: ir.Val
    deps: frozenset = frozenset()


LOCAL_MAX = 8192  # entries a kernel-local array may hold


@dataclass
class Analysis:
    root: Node
    stages: list = field(default_factory=list)
    materialize: set = field(default_factory=set)
    local_ok: bool = True
    deep: set = field(default_factory=set)  # of materialize, the rule-8 cuts (depth)


class KernelBuilder:
    """Lowers one materialised node (the root) and everything inlined into it."""

    def __init__(self, root: Node, materialized: Container[Node], buffer_of, kidx: int, sizes: dict | None = None,
                 local: bool | str = False, region: tuple | None = None):
        self.root = root
        self.local = local
        self.items: list = []  # stages and local arrays, in the order they must run
        self.local_of: dict = {}
        self.scope_ext: dict = {}  # extent of every reduce / local loop variable in scope
        self.tail_stages: set = set()  # stages computed per element of the inner loop (local mode)
        self.n_locals = 0
        self.sizes = sizes or {}
        self.n_stages = 0
        self.M = materialized
        self.buffer_of = buffer_of  # node -> program buffer name
        self.kidx = kidx
        self.out_vars: list[tuple[str, Expr, int]] = []  # (name, extent, output dim)
        out_coords: list[Expr] = []
        # region (axis, start, extent): the kernel computes only root[..., start:start+extent, ...]
        # (a state write: the rest of its buffer already holds the rest of the root's value)
        r_axis, r_start, r_extent = region if region is not None else (-1, sm.ZERO, sm.ONE)
        for d, s in enumerate(root.shape):
            if d == r_axis:
                v = sm.index_var(f"o{d}", r_extent) if r_extent is not sm.ONE else sm.ZERO
                if r_extent is not sm.ONE:
                    self.out_vars.append((f"o{d}", r_extent, d))
                out_coords.append(r_start + v)
            elif s is sm.ONE:
                out_coords.append(sm.ZERO)
            else:
                v = sm.index_var(f"o{d}", s)
                self.out_vars.append((f"o{d}", s, d))
                out_coords.append(v)
        self.out_coords: tuple[Expr, ...] = tuple(out_coords)
        self.stages: list[Stage] = []
        self.stage_of: dict = {}
        self.memo: dict = {}
        self.materialize: set = set()
        self.deep: set = set()  # rule 8's cuts (partition.py applies them last)
        self.reduce_scope: set = set()  # reduce variables enclosing the value being built
        self.depth = 0  # nesting of value() calls (rule 8)
        self.in_reduce = 0
        self.stage_nodes: list = []  # the reductions whose loops enclose the value being built
        self.recomputing = 0  # inside an operand recomputed per output (kernel/recompute.py)
        self.recomputed: set[Node] = set()  # stages reached there: rule 3 leaves them in

    # ---------------------------------------------------------------- values
    def is_buffer(self, n: Node) -> bool:
        return n.op in (g.INPUT, g.DATA) or (n in self.M and n is not self.root)

    def load(self, n: Node, coords: tuple, valid: Expr) -> ir.Val:
        return ir.load(self.buffer_of(n), flat_index(coords, n.shape), valid, n.dtype)

    def value(self, n: Node, coords: tuple, valid: Expr) -> ir.Val:
        key = (n, coords, valid)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        if self.depth >= INLINE_DEPTH_MAX and n.op not in g.LEAVES and not self.is_buffer(n) and not expands(n):
            self.materialize.add(n)  # rule 8 (below a broadcast: node_args.expands)
            self.deep.add(n)
            return self.load(n, coords, valid)
        self.depth += 1
        try:
            v = self._value(n, coords, valid)
        finally:
            self.depth -= 1
        self.memo[key] = v
        return v

    def _value(self, n: Node, coords: tuple, valid: Expr) -> ir.Val:
        op = n.op
        if self.is_buffer(n):
            return self.load(n, coords, valid)
        if op == g.CONST:
            return ir.const(n.arg, n.dtype)
        if op == g.IOTA:
            e = sm.substitute(iota_expr(n), {index_name(d): c for d, c in enumerate(coords)})
            return ir.index(e, n.dtype)
        if op in g.UNARY:
            return ir.alu(op, n.dtype, self.value(n.srcs[0], coords, valid))
        if op in g.BINARY:
            a, b = (self.value(s, coords, valid) for s in n.srcs)
            return ir.alu(op, n.dtype, a, b)
        if op == g.WHERE:
            c = self.value(n.srcs[0], coords, valid)
            if c.op == "const":  # a mask known here (a state write's region): only one side is read
                return self.value(n.srcs[1 if c.args[0] else 2], coords, valid)
            a, b = (self.value(s, coords, valid) for s in n.srcs[1:])
            return ir.alu("where", n.dtype, c, a, b)
        if op == g.CAST:
            return ir.alu("cast", n.dtype, self.value(n.srcs[0], coords, valid))
        if op == g.VIEW:
            return self._view(n, coords, valid)
        if op == g.GATHER:
            data, idx = n.srcs
            if not self.is_buffer(data):
                self.materialize.add(data)
                return ir.const(0, n.dtype)
            iv = self.value(idx, coords, valid)
            return ir.load(self.buffer_of(data), iv, valid, n.dtype)
        if op in g.REDUCE:
            return self._reduce(n, coords, valid)
        raise AssertionError(f"cannot lower {n}")  # pragma: no cover

    def _view(self, n: Node, coords: tuple, valid: Expr) -> ir.Val:
        src = n.srcs[0]
        v = view_of(n)
        flat, vvalid = _view_coords(v, coords)
        guard = sm.logical_and(valid, vvalid)
        # the index is only read where the guard holds: simplify it there (a padded view's
        # re-split flat index loses its divisions: the ResNet-18 stem pool's padded input, 1.3 -> 1.0 ms)
        flat = sm.assume(flat, guard)
        if self.is_buffer(src):
            return ir.load(self.buffer_of(src), flat, guard, src.dtype)
        scoords = unflatten(flat, src.shape)
        if self.in_reduce and src not in self.M and self._varies_in_reduction(scoords):
            if broadcast_read(self, v.numel, src) and inline_cost(self, src, RECOMPUTE_LIMIT) > RECOMPUTE_LIMIT \
                    and not self._scan_term(src):  # (kernel/recompute.py: a short window may recompute instead)
                cut = few_row_recompute(self, v.numel, src, scoords, RECOMPUTE_LIMIT)
                if cut is not None:  # a few-row contraction recomputes its operand (kernel/recompute.py)
                    self.materialize |= cut
                    self.recomputing += 1
                    inner = self.value(src, scoords, guard)
                    self.recomputing -= 1
                    return inner if vvalid is sm.ONE else \
                        ir.alu("where", n.dtype, ir.index(vvalid, dt.bool_), inner, ir.const(0, n.dtype))
                j = self._local_var(scoords)
                if self.local in ("stream", "stream+"):
                    # streamed (kernel/online.py): only what the key-axis stages make stays on chip (P);
                    # q's rotary or a mask is a buffer, or computed where read ("stream+"); what reads
                    # a reduction inside another loop (a q norm in the score's depth loop) is a buffer
                    if not reads_reduction(self, src) and self.local == "stream+":
                        inner = self.value(src, scoords, guard)
                        return inner if vvalid is sm.ONE else \
                            ir.alu("where", n.dtype, ir.index(vvalid, dt.bool_), inner, ir.const(0, n.dtype))
                    if not reads_reduction(self, src) or self.in_reduce > 1:
                        j = None
                if j is not None:
                    inner = self._localize(src, scoords, guard, j)
                    if vvalid is sm.ONE:
                        return inner
                    return ir.alu("where", n.dtype, ir.index(vvalid, dt.bool_), inner, ir.const(0, n.dtype))
                self.materialize.add(src)  # rule 4
                return ir.load(self.buffer_of(src), flat, guard, src.dtype)
        inner = self.value(src, scoords, guard)
        if vvalid is sm.ONE:
            return inner
        return ir.alu("where", n.dtype, ir.index(vvalid, dt.bool_), inner, ir.const(0, n.dtype))

    def _scan_term(self, src: Node) -> bool:
        """Whether src is the term of a masked short sum (cumsum's, kernel/scan.py) at the kernel's one
        reduction level, cheap enough (SCAN_INLINE_MAX operations) to recompute: inlined, not stored
        by rule 4 (cumprod's log2|x|: 8.6 GB of the real KernelBench's 90 written and read back)."""
        return self.in_reduce == 1 and bool(self.stage_nodes) and masked_short_sum(self.stage_nodes[-1]) \
            and inline_cost(self, src, SCAN_INLINE_MAX) <= SCAN_INLINE_MAX

    def _reduce(self, n: Node, coords: tuple, valid: Expr) -> ir.Val:
        axes = reduce_axes(n)
        coords = tuple(sm.ZERO if d in axes else c for d, c in enumerate(coords))
        free = set().union(*(sm.free_vars(c) for c in coords))
        if free & self.reduce_scope:  # rule 2: nested reduction depending on the enclosing loop
            j = self._local_var(coords)
            if j is not None:
                return self._localize(n, coords, valid, j)
            self.materialize.add(n)
            return self.load(n, coords, valid)
        if sm.free_vars(valid) & self.reduce_scope:
            # needed only where a guard over the enclosing reduce loop holds: a stage hoisted out of
            # that loop could not evaluate the guard (rule 2's case, reached through a mask)
            self.materialize.add(n)
            return self.load(n, coords, valid)
        key = (n, coords)
        st = self.stage_of.get(key)
        if st is not None:
            return _scaled(st)
        if any(s.node is n for s in self.stages):  # rule 2: same reduction at other coordinates
            self.materialize.add(n)
            return self.load(n, coords, valid)
        if n is not self.root and is_contraction(n) and any(_splits_dims(c) for c in coords):
            self.materialize.add(n)  # rule 5: keep a contraction's m/n/k structure visible
            return self.load(n, coords, valid)
        outs = {name for name, _, _ in self.out_vars}
        st = self._stage(n, coords, _guard_within(valid, free | (set(sm.free_vars(valid)) - outs)))
        self.stage_of[key] = st
        st.deps = frozenset(free & outs)
        if self.recomputing:
            self.recomputed.add(n)
        self.stages.append(st)
        self.items.append(st)
        return _scaled(st)

    def _stage(self, n: Node, coords: tuple, valid: Expr) -> Stage:
        """An accumulator and reduce loops computing reduction n at coords."""
        si = self.n_stages
        self.n_stages += 1
        name = f"acc{si}"
        src = n.srcs[0]
        rvars, scoords = [], list(coords)
        for a in reduce_axes(n):
            rv = f"r{si}_{a}"
            rvars.append((rv, src.shape[a]))
            scoords[a] = sm.index_var(rv, src.shape[a]) if src.shape[a] is not sm.ONE else sm.ZERO
        st = Stage(n, coords, name, "sum" if n.op == g.SUM else "max", acc_dtype(n.dtype), rvars, tf32=g.is_tf32(n))
        self.reduce_scope |= {rv for rv, _ in rvars}
        self.scope_ext.update({rv: ext for rv, ext in rvars})
        self.in_reduce += 1
        self.stage_nodes.append(n)
        upd = self.value(src, tuple(scoords), valid)
        self.stage_nodes.pop()
        self.in_reduce -= 1
        self.reduce_scope -= {rv for rv, _ in rvars}
        if st.op == "sum" and RECOMPUTE.get() and st.dtype.is_float:
            split = split_invariant_factor(upd, {rv for rv, _ in rvars}, st.dtype)
            if split is not None:  # (a row statistic out of the loop: kernel/recompute.py)
                upd, st.scale = split
        if upd.dtype != st.dtype:
            upd = ir.alu("cast", st.dtype, upd)
        st.update = upd
        return st

    # ---------------------------------------------------------------- kernel-local arrays
    def _local_var(self, coords: tuple) -> str | None:
        """In local mode: the one enclosing loop variable the coordinates depend on, if it has a static
        extent small enough to hold a row on chip."""
        if not self.local:
            return None
        scope = set().union(*(sm.free_vars(c) for c in coords)) & self.reduce_scope
        if len(scope) != 1:
            return None
        (j,) = scope
        ext = self.scope_ext.get(j)
        if ext is None:
            return None
        if self.local in ("stream", "stream+"):  # streamed, never stored (kernel/online.py): any length
            return j if not ext.is_const or ext.value > 1 else None
        return j if ext.is_const and 1 < ext.value <= LOCAL_MAX else None

    def _localize(self, n: Node, coords: tuple, valid: Expr, j: str) -> ir.Val:
        E = self.scope_ext[j].value if self.scope_ext[j].is_const else self.scope_ext[j]
        ph = sm.index_var("_lj", E)
        key = (n, tuple(sm.substitute(c, {j: ph}) for c in coords), sm.substitute(valid, {j: ph}))
        loc = self.local_of.get(key)
        jv = sm.index_var(j, E)
        if loc is None:
            i = self.n_locals
            self.n_locals += 1
            name, var = f"loc{i}", f"l{i}"
            lv = sm.index_var(var, E)
            c2 = tuple(sm.substitute(c, {j: lv}) for c in coords)
            v2 = sm.substitute(valid, {j: lv})
            self.reduce_scope.add(var)
            self.scope_ext[var] = sm.sym(E)
            self.in_reduce += 1
            if n.op in g.REDUCE:
                axes = reduce_axes(n)
                inner = self._stage(n, tuple(sm.ZERO if d in axes else c for d, c in enumerate(c2)), v2)
                val = ir.acc(inner.acc, inner.dtype)
            else:
                inner, val = None, self.value(n, c2, v2)
            self.in_reduce -= 1
            self.reduce_scope.discard(var)
            d = acc_dtype(n.dtype) if n.dtype.is_float else n.dtype
            if val.dtype != d:
                val = ir.alu("cast", d, val)
            free = set().union(*(sm.free_vars(c) for c in c2))
            outs = {nm for nm, _, _ in self.out_vars}
            loc = LocalStage(n, name, var, E, d, inner, val, frozenset(free & outs))
            self.local_of[key] = loc
            self.items.append(loc)
        v = ir.load(loc.name, jv, sm.ONE, loc.dtype)
        return v if loc.dtype == n.dtype else ir.alu("cast", n.dtype, v)

    def _varies_in_reduction(self, coords: tuple) -> bool:
        """Whether coordinates change with an enclosing reduce loop (else the value is loop-invariant
        and recomputing it costs nothing: compilers hoist it)."""
        return any(sm.free_vars(c) & self.reduce_scope for c in coords)

    # ---------------------------------------------------------------- analysis and build
    def analyze(self) -> Analysis:
        self.root_val = self.value(self.root, self.out_coords, sm.ONE)
        if self.local and self.local_of:
            return self._analyze_local()
        O: set[str] = set()
        for st in self.stages:
            # a stage already materialised (rule 2 found it also read inside another stage's loop:
            # a batched matmul feeding softmax) is read from memory: its dependences must not widen
            # O and push the softmax's own max and sum out of the kernel by rule 3
            if st.node not in self.materialize:
                O |= st.deps
        if self.root.op in g.REDUCE:
            O = {name for name, _, _ in self.out_vars}
        for st in self.stages:
            if st.node in self.materialize or st.node in self.recomputed:
                continue
            if st.deps != O and not (self.root.op in g.REDUCE and st.node is self.root):
                self.materialize.add(st.node)  # rule 3
            elif st.node is not self.root and self._recomputations(st, O) >= REDUNDANT_MIN:
                self.materialize.add(st.node)  # rule 3, through a coarser index (GroupNorm's c // 8)
        gemms = [st for st in self.stages if st.deps == O and len(O) >= 2 and is_contraction(st.node)]
        if len(gemms) > 1:  # rule 6: one contraction per kernel; the others are its epilogue's inputs
            keep = next((st for st in gemms if st.node is self.root), gemms[0])
            self.materialize.update(st.node for st in gemms if st is not keep)
        self.O = O
        return Analysis(self.root, [st for st in self.stages if st.node not in self.recomputed], set(self.materialize),
                        deep=set(self.deep))

    def _recomputations(self, st: Stage, O: set) -> int:
        """How many points of the kernel's parallel loops over O evaluate each distinct result of
        stage st: 1 when its coordinates tell O's points apart; 8 for GroupNorm's statistics read
        at channel // 8 by a kernel over channels (bounded by the coordinates' value ranges)."""
        points = 1
        for name, ext, _ in self.out_vars:
            if name in O:
                if not ext.is_const:
                    return 1
                points *= ext.value
        distinct = 1
        for c in st.coords:
            if c.vmax - c.vmin >= points:
                return 1
            distinct *= int(c.vmax - c.vmin) + 1
        return points // max(distinct, 1)

    def _analyze_local(self) -> Analysis:
        """A row kernel with local arrays: every stage (but a reduction root, which becomes the tail's
        per-element reduction) and every local depend on one set O of output dims."""
        outs = frozenset(nm for nm, _, _ in self.out_vars)
        tail = [st for st in self.stages if st.deps == outs]  # per output element: inner-loop reductions
        others = [st for st in self.stages if st.deps != outs]
        deps = {st.deps for st in others} | {loc.deps for loc in self.local_of.values()}
        O = set().union(*deps) if deps else set(outs)
        # (a streamed kernel's operands, its mask and q, become buffers first: kernel/online.py)
        ok = (not self.materialize or self.local in ("stream", "stream+")) and all(st.deps == O for st in others) and \
            all(d <= O for d in deps)
        self.tail_stages = set(id(st) for st in tail) if O != outs else set()
        self.O = O
        return Analysis(self.root, list(self.stages), set(self.materialize), local_ok=ok, deep=set(self.deep))

    @staticmethod
    def _stage_stmts(st: Stage) -> list:
        assert st.update is not None, f"stage {st.acc} was never given its update"  # set by _stage
        upd: tuple = (ir.Update(st.acc, st.op, st.update),)
        for rv, ext in reversed(st.rvars):
            if ext is not sm.ONE:
                upd = (ir.Loop(rv, ext, "reduce", upd),)
        return [ir.Acc(st.acc, st.op, st.dtype, st.tf32), *upd]

    def _local_stmts(self, loc: LocalStage) -> list:
        body = (self._stage_stmts(loc.inner) if loc.inner is not None else []) + \
            [ir.Store(loc.name, sm.index_var(loc.var, loc.extent), loc.value)]
        return [ir.Local(loc.name, loc.dtype, loc.extent),
                ir.Loop(loc.var, sm.sym(loc.extent), "parallel", tuple(body))]

    def build(self, out_buffer: str) -> tuple[ir.Kernel, dict]:
        """Kernel IR with canonical parameter names b0.. and the map param -> program buffer."""
        if self.materialize:
            raise AssertionError(f"build() with pending materialisations {self.materialize}")
        root_val = self.root_val
        out_index = flat_index(self.out_coords, self.root.shape)
        store_val = root_val if root_val.dtype == self.root.dtype else ir.alu("cast", self.root.dtype, root_val)
        O = [(nm, ext) for nm, ext, _ in self.out_vars if nm in self.O]
        inner = [(nm, ext) for nm, ext, _ in self.out_vars if nm not in self.O]
        body: list = []
        tail: list = []
        for it in (self.items if self.local_of else self.stages):
            if isinstance(it, LocalStage):
                body.extend(self._local_stmts(it))
            elif id(it) in self.tail_stages:
                tail.extend(self._stage_stmts(it))
            else:
                body.extend(self._stage_stmts(it))
        store: tuple = (*tail, ir.Store(out_buffer, out_index, store_val))
        for nm, ext in reversed(inner):
            store = (ir.Loop(nm, ext, "parallel", store),)
        body.extend(store)
        nest = tuple(body)
        for nm, ext in reversed(O):
            nest = (ir.Loop(nm, ext, "parallel", nest),)
        nest = nest if self.stages or self.local_of else ordered(nest)  # (elementwise: one operand order)
        bufs = [out_buffer]
        dtypes = {out_buffer: self.root.dtype}
        sizes = {out_buffer: self.root.numel}
        locals_ = {loc.name for loc in self.local_of.values()}
        for v in _vals_in(nest):
            if v.op == "load" and v.args[0] not in bufs and v.args[0] not in locals_:
                bufs.append(v.args[0])
                dtypes[v.args[0]] = v.dtype
        rename = {b: f"b{i}" for i, b in enumerate(bufs)}
        nest = _rename_buffers(nest, {**rename, **{nm: nm for nm in locals_}})
        params = []
        for b in bufs:
            size = sizes.get(b, self.sizes.get(b))
            assert size is not None, f"no size known for buffer {b}"  # lower() passes every buffer's
            params.append(ir.BufferParam(rename[b], dtypes[b], size, "out" if b == out_buffer else "in"))
        dims = sorted(_dims_in(nest, params))
        k = ir.Kernel(f"k{self.kidx}_{self.root.op}", tuple(params), tuple(dims), nest,
                      meta={"root": self.root.op, "stages": len(self.stages), "locals": len(self.local_of)})
        ir.verify(k)
        return k, {rename[b]: b for b in bufs}

    def copy_from(self, src_buffer: str) -> None:
        """Make this builder's kernel a plain copy of `src_buffer` (same shape) into the root's place."""
        self.root_val = ir.load(src_buffer, flat_index(self.out_coords, self.root.shape), sm.ONE, self.root.dtype)
        self.O = {nm for nm, _, _ in self.out_vars}


def _vals_in(body) -> list:
    roots = []
    for s in ir.walk_stmts(body):
        roots.extend(ir.stmt_vals(s))
    return ir.val_toposort(roots)


def _rename_buffers(body: tuple, rename: dict) -> tuple:
    memo: dict = {}

    def rv(v: ir.Val) -> ir.Val:
        r = memo.get(v)
        if r is not None:
            return r
        if v.op == "load":
            b, idx, valid = v.args
            idx = rv(idx) if isinstance(idx, ir.Val) else idx
            r = ir.Val("load", (rename[b], idx, valid), v.dtype)
        elif v.srcs:
            r = ir.Val(v.op, tuple(rv(a) if isinstance(a, ir.Val) else a for a in v.args), v.dtype)
        else:
            r = v
        memo[v] = r
        return r

    return ir.map_stmts(body, rv, rename.__getitem__)


def _dims_in(body: tuple, params) -> set:
    names: set = set()
    loopvars: set = set()
    for s in ir.walk_stmts(body):
        if isinstance(s, ir.Loop):
            loopvars.add(s.var)
            names |= sm.free_vars(s.extent)
        if isinstance(s, ir.Store):
            names |= sm.free_vars(s.index)
    for v in _vals_in(body):
        if v.op == "load":
            if not isinstance(v.args[1], ir.Val):
                names |= sm.free_vars(v.args[1])
            names |= sm.free_vars(v.args[2])
        elif v.op == "index":
            names |= sm.free_vars(v.args[0])
    for p in params:
        names |= sm.free_vars(p.size)
    return {n for n in names if n not in loopvars and not n.startswith("_")}


def analyzed_builder(root: Node, M: Container[Node], buffer_of, kidx: int, sizes: dict | None, local,
                     region: tuple | None = None):
    """A KernelBuilder for root, analysed: in local mode when that yields a valid row kernel with
    local arrays, else in the default mode."""
    if not isinstance(local, (bool, str)):  # roots that stream (kernel/lower.py StreamRoots)
        local = ("stream+" if getattr(local, "prologues", False) and root not in getattr(local, "plain", ()) else "stream") \
            if root in local else False
    if local:
        b = KernelBuilder(root, M, buffer_of, kidx, sizes, local=local, region=region)
        if (an := b.analyze()).local_ok:
            return b, an
    b = KernelBuilder(root, M, buffer_of, kidx, sizes, region=region)
    return b, b.analyze()


def _scaled(st: Stage) -> ir.Val:
    """A stage's result: its accumulator, times the factor taken out of its updates if any."""
    a = ir.acc(st.acc, st.dtype)
    return a if st.scale is None else ir.alu("mul", st.dtype, a, st.scale)
