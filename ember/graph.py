"""The graph (HLIR): hash-consed nodes of Ember's primitive operations.

Primitives (every high-level op is a composition of these):

=========  ==========================================================================================
leaves     INPUT (named, possibly symbolic shape), CONST (a scalar), DATA (a constant array, e.g. a
           weight), IOTA (an integer tensor whose value is a symbolic expression of its indices)
unary      EXP2, LOG2, SIN, SQRT, RECIP
binary     ADD, MUL, MOD (truncated, like C fmod / %), LT (-> bool), PHILOX (counter-based random:
           int64 seed, int64 counter -> uniform float32 in [0, 1), see primitives/random.py)
ternary    WHERE (select: IEEE-safe, unlike c*a + (1-c)*b, which turns 0*inf into NaN)
reduce     SUM, MAX over a set of axes (reduced axes stay, with size 1)
data       VIEW (index arithmetic over the source's flat buffer, see view.py), GATHER (flat take),
           CAST
=========  ==========================================================================================

Each primitive is one row of the primitives table (ember/primitives): its kind, dtype rule, reference
and C forms, gradient, cost and e-graph name; the constructors below check arguments against it.

WHERE is one primitive beyond the original design's list, added on purpose: masks with -inf (causal
attention, max-pool padding) cannot be expressed with add/mul without NaNs.

Nodes are immutable and interned: building the same node twice returns the same object, so ``is``
is structural equality and common subexpressions are shared automatically. ``node.key`` is a stable
sha256 structural hash (the key of every cache).
"""
from __future__ import annotations

import hashlib
import weakref
from typing import Iterable, Sequence

import numpy as np

from . import dtypes as dt
from . import primitives as P
from . import symbolic as sm
from .dtypes import DType
from .primitives import GraphError
from .symbolic import Expr, sym
from .view import View

# op names and kinds come from the primitives table (ember/primitives): one row per primitive
INPUT, CONST, DATA, IOTA = "input", "const", "data", "iota"
EXP2, LOG2, SIN, SQRT, RECIP = "exp2", "log2", "sin", "sqrt", "recip"
ADD, MUL, MOD, LT = "add", "mul", "mod", "lt"
WHERE = "where"
SUM, MAX = "sum", "max"
VIEW, GATHER, CAST = "view", "gather", "cast"
PHILOX = "philox"
COLLECTIVE = "collective"

LEAVES = P.names("leaf")
UNARY = P.names("unary")
BINARY = P.names("binary")
REDUCE = P.names("reduce")
ELEMENTWISE = UNARY + BINARY + P.names("select") + P.names("cast")
ALL_OPS = tuple(P.GRAPH)
assert set(ALL_OPS) >= {INPUT, CONST, DATA, IOTA, EXP2, LOG2, SIN, SQRT, RECIP, ADD, MUL, MOD, LT, WHERE, SUM,
                        MAX, VIEW, GATHER, CAST, PHILOX, COLLECTIVE}


class Data:
    """A constant array in the graph. Identified by (name, content hash): equal content under one name
    is one node, but two parameters that happen to hold equal values stay distinct."""

    __slots__ = ("array", "name", "sha")

    def __init__(self, array: np.ndarray, name: str = ""):
        array = np.asarray(array)
        if array.flags.writeable or array.base is not None or not array.flags.c_contiguous:
            # a private, frozen copy: the content hash must stay true even if the caller's array
            # changes later (np.ascontiguousarray would also turn a 0-d array into shape (1,))
            array = np.array(array, order="C", copy=True)
        array.setflags(write=False)
        self.array = array
        self.name = name
        h = hashlib.sha256()
        h.update(str(self.array.dtype).encode() + str(self.array.shape).encode())
        h.update(self.array.tobytes())
        self.sha = h.hexdigest()

    def __eq__(self, o) -> bool:
        return isinstance(o, Data) and o.sha == self.sha and o.name == self.name

    def __hash__(self) -> int:
        return hash((self.sha, self.name))

    def __repr__(self) -> str:
        return f"Data({self.name or '?'}:{self.sha[:10]})"


class TF32Axes(tuple):
    """The axes of a float32 SUM of products whose operands may be rounded to TF32 (ember/precision.py).
    A tuple everywhere axes are read; interning, hashing and saving tell it apart from plain axes."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"tf32{tuple(self)!r}"


def _arg_key(arg) -> object:
    """A hashable value for interning that distinguishes 0.0 from -0.0 and 1 from 1.0 from True."""
    if isinstance(arg, TF32Axes):
        return ("tf32", tuple(arg))
    if isinstance(arg, float):
        return ("f", arg.hex())
    if isinstance(arg, bool):
        return ("b", arg)
    if isinstance(arg, int):
        return ("i", arg)
    return arg


def _arg_str(arg) -> str:
    """The stable text of an argument for structural hashing."""
    if isinstance(arg, float):
        return "f" + arg.hex()
    if isinstance(arg, Data):
        return f"data:{arg.name}:{arg.sha}"
    if isinstance(arg, DType):
        return arg.name
    return repr(arg)


_INTERN: "weakref.WeakValueDictionary[tuple, Node]" = weakref.WeakValueDictionary()
SKEY_DEPTH = 3  # levels of operands a commutative op's order looks at (Node.skey)


def _local_text(n, depth: int) -> str:
    """n's structure `depth` levels down, leaves unnamed (Node.skey)."""
    head = n._head
    if head is None:  # (kept: each node's text is read by every skey up to SKEY_DEPTH levels above it;
        # a recurrence unrolled into 10^5 nodes spent a quarter of its import rendering the same shapes)
        arg = "" if n.op in (INPUT, DATA) else _arg_str(n.arg)
        head = n._head = f"{n.op}|{n.dtype.name}|{sm.shape_str(n.shape)}|{arg}"
    if depth <= 0 or not n.srcs:
        return head
    return head + "(" + ",".join(_local_text(s, depth - 1) for s in n.srcs) + ")"


class Node:
    __slots__ = ("op", "srcs", "arg", "dtype", "shape", "_key", "_skey", "_head", "__weakref__")

    op: str
    srcs: tuple
    arg: object
    dtype: DType
    shape: tuple

    def __new__(cls, op: str, srcs: tuple, arg, dtype: DType, shape: tuple):
        ik = (op, srcs, _arg_key(arg), dtype, shape)
        n = _INTERN.get(ik)
        if n is not None:
            return n
        n = object.__new__(cls)
        n.op, n.srcs, n.arg, n.dtype, n.shape, n._key, n._skey, n._head = op, srcs, arg, dtype, shape, None, None, None
        _INTERN[ik] = n
        return n

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Expr:
        return sm.prod(self.shape)

    @property
    def key(self) -> str:
        """Stable structural hash (sha256 hex) of the whole subgraph."""
        if self._key is None:
            # iterative post-order that stops at nodes already hashed: hashing each new node as it
            # is built (binary() does, to order commutative operands) then costs O(1), not O(graph)
            stack = [(self, False)]
            while stack:
                n, ready = stack.pop()
                if n._key is not None:
                    continue
                if not ready:
                    stack.append((n, True))
                    stack.extend((s, False) for s in n.srcs if s._key is None)
                    continue
                h = hashlib.sha256()
                h.update(f"{n.op}|{n.dtype.name}|{sm.shape_str(n.shape)}|{_arg_str(n.arg)}|".encode())
                for s in n.srcs:
                    h.update(s._key.encode())
                n._key = h.hexdigest()
        return self._key

    @property
    def skey(self) -> str:
        """A local structural hash: the node's op, dtype, shape and argument and those of what it
        reads, SKEY_DEPTH levels down, leaving out which input or data a leaf is. It orders
        commutative operands (`binary`), so every layer of a model — or step of a recurrence —
        builds `w * x` in one order and renders to the same kernel text under renaming (one NVRTC
        compile, one megakernel task function); by `key` (the whole history below, names included)
        the order had followed the weights' names and, past the first layer, the depth of the
        residual stream."""
        if self._skey is None:
            self._skey = hashlib.sha256(_local_text(self, SKEY_DEPTH).encode()).hexdigest()
        return self._skey

    def __repr__(self) -> str:
        arg = "" if self.arg is None else f", {_arg_str(self.arg) if not isinstance(self.arg, View) else self.arg}"
        return f"Node({self.op}{arg}, {sm.shape_str(self.shape)}, {self.dtype.name})"

    def __reduce__(self):
        raise TypeError("graph nodes are not picklable; use ember.graph.save / load")


# ------------------------------------------------------------------------------------------------
# traversal

def toposort(outputs: Iterable[Node]) -> list[Node]:
    """All nodes reachable from outputs, each after its sources (iterative; deterministic)."""
    order: list[Node] = []
    seen: set = set()
    for root in outputs:
        if root in seen:
            continue
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            if n in seen:
                continue
            seen.add(n)
            stack.append((n, True))
            for s in reversed(n.srcs):
                if s not in seen:
                    stack.append((s, False))
    return order


def consumers(order: Sequence[Node]) -> dict:
    out: dict = {n: [] for n in order}
    for n in order:
        for s in n.srcs:
            out[s].append(n)
    return out


def inputs_of(outputs: Iterable[Node]) -> list[Node]:
    return [n for n in toposort(outputs) if n.op == INPUT]


def symbolic_dims(outputs: Iterable[Node]) -> list[str]:
    names: set = set()
    for n in toposort(outputs):
        for s in n.shape:
            names |= sm.free_vars(s)
    return sorted(names)


def graph_str(outputs: Sequence[Node]) -> str:
    order = toposort(outputs)
    ids = {n: i for i, n in enumerate(order)}
    lines = []
    for n in order:
        srcs = ", ".join(f"%{ids[s]}" for s in n.srcs)
        arg = "" if n.arg is None else f" [{n.arg if isinstance(n.arg, View) else _arg_str(n.arg)}]"
        mark = "  <- output" if n in outputs else ""
        lines.append(f"%{ids[n]} = {n.op}({srcs}){arg} : {n.dtype.name}{sm.shape_str(n.shape)}{mark}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# checked constructors

def _shape(shape: Sequence) -> tuple:
    out = []
    for s in shape:
        try:
            e = sym(s)
        except TypeError:
            raise GraphError(f"dimension {s!r} in shape {tuple(shape)} is not an integer or a dimension name") from None
        if e.vmax < 0 or (e.is_const and e.value < 0):
            raise GraphError(f"negative dimension {e} in shape {tuple(shape)}")
        out.append(e)
    return tuple(out)


def input_node(name: str, shape: Sequence, dtype: DType) -> Node:
    if not isinstance(name, str) or not name.isidentifier():
        raise GraphError(f"input name must be an identifier, got {name!r}")
    for s in shape:
        if isinstance(s, str) and (not s.isidentifier() or s.startswith("_")):
            raise GraphError(f"dimension name {s!r} must be an identifier not starting with '_'")
    return Node(INPUT, (), name, dtype, _shape(shape))


def const_node(value, dtype: DType) -> Node:
    if dtype.is_bool:
        value = bool(value)
    elif dtype.is_int:
        if isinstance(value, float) and not float(value).is_integer():
            raise GraphError(f"constant {value} is not an integer ({dtype.name})")
        value = int(value)
        info = np.iinfo(dtype.np)
        if not info.min <= value <= info.max:
            raise GraphError(f"constant {value} does not fit in {dtype.name}")
    else:
        value = float(value)
    return Node(CONST, (), value, dtype, ())


def data_node(array: np.ndarray, name: str = "", dtype: DType | None = None) -> Node:
    dtype = dtype or dt.as_dtype(array.dtype)
    arr = np.asarray(array).astype(dtype.np, copy=False)
    return Node(DATA, (), Data(arr, name), dtype, _shape(arr.shape))


def iota_node(shape: Sequence, expr: Expr, dtype: DType = dt.int32) -> Node:
    """value at index (i0, …) = expr(_i0, …); expr may use symbolic dims too."""
    return Node(IOTA, (), sym(expr), dtype, _shape(shape))


def unary(op: str, x: Node) -> Node:
    if op not in UNARY:
        raise GraphError(f"{op} is not a unary primitive")
    return Node(op, (x,), None, P.GRAPH[op].dtype(x.dtype), x.shape)


def _same_shape(op: str, *xs: Node) -> None:
    for x in xs[1:]:
        if x.shape != xs[0].shape:
            raise GraphError(f"{op}: shapes differ {sm.shape_str(xs[0].shape)} vs {sm.shape_str(x.shape)} "
                             "(broadcast in the Tensor API before building primitives)")


def binary(op: str, a: Node, b: Node) -> Node:
    if op not in BINARY:
        raise GraphError(f"{op} is not a binary primitive")
    _same_shape(op, a, b)
    if a.dtype != b.dtype:
        raise GraphError(f"{op}: dtypes differ ({a.dtype.name} vs {b.dtype.name}); cast first")
    row = P.GRAPH[op]
    out = row.dtype(a.dtype, b.dtype)
    if op == MUL and out.is_float:  # x * 1 is x, bit for bit (signed zeros and NaNs included)
        if _is_one(b) and a.dtype == out:
            return a
        if _is_one(a) and b.dtype == out:
            return b
    if row.commutative and a is not b and (a.skey, a.key) > (b.skey, b.key):  # one canonical order
        a, b = b, a
    return Node(op, (a, b), None, out, a.shape)


def _is_one(n: Node) -> bool:
    """n is the constant 1 (a scalar, or a broadcast of one with no padding)."""
    while n.op == VIEW and n.arg.valid is sm.ONE:
        n = n.srcs[0]
    return n.op == CONST and n.arg == 1


def where_node(c: Node, a: Node, b: Node) -> Node:
    _same_shape(WHERE, c, a, b)
    return Node(WHERE, (c, a, b), None, P.GRAPH[WHERE].dtype(c.dtype, a.dtype, b.dtype), a.shape)


def reduce_node(op: str, x: Node, axes: Sequence[int], tf32: bool = False) -> Node:
    """op over axes (kept with size 1). tf32: a float32 SUM whose products may be formed from
    operands rounded to TF32 (the user asked, see ember/precision.py); ignored for other sums."""
    if op not in REDUCE:
        raise GraphError(f"{op} is not a reduction")
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise GraphError(f"reduce axis {a} out of range for shape {sm.shape_str(x.shape)}")
    axes = tuple(sorted(set(a % x.ndim for a in axes)))
    if not axes:
        return x
    if x.dtype.is_bool and op == SUM:
        raise GraphError("sum of bool: cast to an integer type first")
    shape = tuple(sm.ONE if d in axes else s for d, s in enumerate(x.shape))
    if tf32 and op == SUM and x.dtype == dt.float32:
        axes = TF32Axes(axes)
    return Node(op, (x,), axes, x.dtype, shape)


def is_tf32(n: Node) -> bool:
    """n is a SUM marked for TF32 products."""
    return isinstance(n.arg, TF32Axes)


def cast_node(x: Node, dtype: DType) -> Node:
    if x.dtype == dtype:
        return x
    if x.op == CAST and x.srcs[0].dtype == dtype and _widens(dtype, x.dtype):
        return x.srcs[0]  # a value widened exactly and narrowed back to its own type is itself
    return Node(CAST, (x,), None, dtype, x.shape)


def _widens(a: DType, b: DType) -> bool:
    """Every float `a` is exactly a `b` (bf16 / f16 into f32 or f64, f32 into f64)."""
    return a.is_float and b.is_float and b.itemsize > a.itemsize


def gather_node(data: Node, index: Node) -> Node:
    """out[i] = flat(data)[index[i]]; out has index's shape and data's dtype."""
    if not index.dtype.is_int:
        raise GraphError(f"gather index must be an integer tensor, got {index.dtype.name}")
    return Node(GATHER, (data, index), None, data.dtype, index.shape)


def collective_node(x: Node, kind: str, world: int) -> Node:
    """x combined across `world` ranks (ember/primitives/collective.py): "all_reduce" sums it,
    "all_gather" concatenates the ranks' x along axis 0."""
    from .primitives.collective import CollectiveOp
    if not isinstance(world, int) or world < 1:
        raise GraphError(f"{kind}: the world size must be a positive int, got {world!r}")
    if kind not in ("all_reduce", "all_gather"):
        raise GraphError(f"unknown collective {kind!r} (all_reduce, all_gather)")
    if kind == "all_gather" and not x.shape:
        raise GraphError("all_gather of a scalar: give it an axis to concatenate along")
    shape = x.shape if kind == "all_reduce" else (x.shape[0] * world,) + tuple(x.shape[1:])
    return Node(COLLECTIVE, (x,), CollectiveOp(kind, world).text(), x.dtype, _shape(shape))


def view_node(x: Node, v: View) -> Node:
    """A view whose index addresses x's flat buffer. Identity views vanish; views of views compose
    through the Tensor API (see `apply_view`)."""
    if v.shape == x.shape and v.is_contiguous():
        return x
    _check_view_fits(x, v)
    return Node(VIEW, (x,), v, x.dtype, v.shape)


def _check_view_fits(x: Node, v: View) -> None:
    """Refuse a view that certainly reads outside its source. Checked where the bounds are exact: an
    unmasked index that is a constant plus multiples of distinct index variables with constant extents
    (interval bounds of such a sum are its true range) over a source of constant size."""
    numel = x.numel
    idx = v.index
    if v.valid is not sm.ONE or not numel.is_const or sm.ZERO in v.shape:
        return
    terms = idx.args[1] if idx.op == "add" else ((idx, 1),) if idx.op == "var" else ()
    if idx.op not in ("add", "var", "const") or any(t.op != "var" or not isinstance(t.args[2], int) for t, _ in terms):
        return
    if idx.vmin < 0 or idx.vmax >= numel.value:
        raise GraphError(f"view {v} reads elements {idx.vmin}..{idx.vmax} of a source with {numel.value} elements "
                         f"(shape {sm.shape_str(x.shape)})")


def current_view(x: Node) -> tuple[Node, View]:
    """(buffer node, view over it) for any node: a VIEW's source and view, else x itself, contiguous."""
    if x.op == VIEW:
        return x.srcs[0], x.arg
    return x, View.contiguous(x.shape)


# Largest composed view (characters of index + valid expression) that apply_view builds. Realistic
# chains stay far below it; long random mixes of permute/flip/merge/split can grow the composed index
# without bound, and then a view of the view node is cheaper for everyone downstream.
VIEW_COMPOSE_LIMIT = 2000


def apply_view(x: Node, fn) -> Node:
    """fn(view) applied to x: composed with x's own view when x is a VIEW (one node, one index
    expression), or stacked as a view of the view node when composing would exceed
    VIEW_COMPOSE_LIMIT. A VIEW's source is therefore usually, but not always, a non-view node."""
    base, v = current_view(x)
    nv = fn(v)
    if base is not x and len(nv.index.key) + len(nv.valid.key) > VIEW_COMPOSE_LIMIT:
        return view_node(x, fn(View.contiguous(x.shape)))
    return view_node(base, nv)


def to_dot(outputs: Sequence[Node]) -> str:
    """Graphviz DOT text of the graph (render with `dot -Tsvg`); views and leaves are boxes."""
    order = toposort(outputs)
    ids = {n: i for i, n in enumerate(order)}
    lines = ["digraph ember {", "  rankdir=TB; node [fontname=monospace, fontsize=10];"]
    for n in order:
        shape = "box" if n.op in LEAVES or n.op == VIEW else "ellipse"
        label = f"{n.op}\\n{n.dtype.name}{sm.shape_str(n.shape)}"
        if n.op == INPUT:
            label = f"input {n.arg}\\n{n.dtype.name}{sm.shape_str(n.shape)}"
        style = ", style=bold" if n in outputs else ""
        lines.append(f'  n{ids[n]} [label="{label}", shape={shape}{style}];')
        for src in n.srcs:
            lines.append(f"  n{ids[src]} -> n{ids[n]};")
    lines.append("}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# save / load

def _node_json(n: Node, ids: dict) -> dict:
    d: dict = {"op": n.op, "dtype": n.dtype.name, "shape": [sm.to_json(s) for s in n.shape],
               "srcs": [ids[s] for s in n.srcs]}
    a = n.arg
    if isinstance(a, View):
        d["arg"] = {"view": {"shape": [sm.to_json(s) for s in a.shape], "index": sm.to_json(a.index),
                             "valid": sm.to_json(a.valid)}}
    elif isinstance(a, Data):
        import base64
        d["arg"] = {"data": {"name": a.name, "dtype": dt.as_dtype(a.array.dtype).name, "shape": list(a.array.shape),
                             "b64": base64.b64encode(a.array.tobytes()).decode()}}
    elif isinstance(a, Expr):
        d["arg"] = {"expr": sm.to_json(a)}
    elif isinstance(a, float):
        d["arg"] = {"float": a.hex()}
    elif isinstance(a, TF32Axes):
        d["arg"] = {"axes": list(a), "tf32": True}
    elif isinstance(a, tuple):
        d["arg"] = {"axes": list(a)}
    else:
        d["arg"] = {"value": a}
    return d


def to_json(outputs: dict) -> dict:
    """A JSON-able dict for a graph with named outputs."""
    order = toposort(outputs.values())
    ids = {n: i for i, n in enumerate(order)}
    return {"format": "ember-graph", "version": 1, "nodes": [_node_json(n, ids) for n in order],
            "outputs": {k: ids[v] for k, v in outputs.items()}}


def from_json(j: dict) -> dict:
    import base64
    if j.get("format") != "ember-graph":
        raise GraphError("not an Ember graph file")
    nodes: list = []
    for d in j["nodes"]:
        a = d["arg"]
        if "view" in a:
            v = a["view"]
            arg = View(tuple(sm.from_json(s) for s in v["shape"]), sm.from_json(v["index"]), sm.from_json(v["valid"]))
        elif "data" in a:
            dd = a["data"]
            arr = np.frombuffer(base64.b64decode(dd["b64"]), dtype=dt.as_dtype(dd["dtype"]).np).reshape(dd["shape"])
            arg = Data(arr, dd["name"])
        elif "expr" in a:
            arg = sm.from_json(a["expr"])
        elif "float" in a:
            arg = float.fromhex(a["float"])
        elif "axes" in a:
            arg = TF32Axes(a["axes"]) if a.get("tf32") else tuple(a["axes"])
        else:
            arg = a["value"]
        shape = tuple(sm.from_json(s) for s in d["shape"])
        nodes.append(Node(d["op"], tuple(nodes[i] for i in d["srcs"]), arg, dt.as_dtype(d["dtype"]), shape))
    return {k: nodes[i] for k, i in j["outputs"].items()}


def save(path, outputs: dict) -> None:
    import json
    with open(path, "w") as f:
        json.dump(to_json(outputs), f)


def load(path) -> dict:
    import json
    with open(path) as f:
        return from_json(json.load(f))

