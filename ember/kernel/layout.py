"""Contraction-friendly layouts: the summed axis innermost, in memory (a convolution's channels last).

A buffer is stored row-major in its node's shape, so a layout is chosen by choosing the node. Two
rewrites, both exact (they reorder a sum's terms and rename a tensor's axes), run before the
partition on targets whose tensor cores read operands from shared memory (`wgmma`):

1. **The longest summed axis innermost.** A contraction over several axes (a convolution sums
   channels x kernel rows x kernel columns) is rebuilt with its longest summed axis that fills
   whole 16-byte chunks last, so its flattened k index walks the channels fastest: 8 consecutive k
   of a bf16 operand (4 of float32) are then 16 contiguous bytes wherever the channels are
   contiguous. 16-bit products, and float32 ones (TF32 or 3xTF32 `wgmma`, whose operands must be
   K-major in shared memory).

       sum_{c,r,s} a[.., c, r, s] * b[.., c, r, s]  ==  sum_{r,s,c} a'[.., r, s, c] * b'[.., r, s, c]

2. **The operand's source in that order.** Where a contraction reads a node X through a view and
   its innermost summed variable walks axis d of X with d not X's innermost axis, X is rebuilt as
   X' with d last (an elementwise node over its sources permuted, a reduction over its source
   permuted, a constant transposed), and every reader reads X' through the inverse permutation:

       X  ==  permute(X', inverse(L)),    X' = op(permute(src, L), ...)

   The conv's input activation (materialised by rule 4 of the partition) becomes an NHWC buffer
   written by the previous conv's epilogue, its weights an [O, kh, kw, C] constant: both operands
   of a 1x1 conv are then plain strided loads TMA copies (a GEMM), and a 3x3 conv's input is 16
   contiguous bytes per pixel and tap. Graph inputs and outputs keep their layout (the caller sees
   them), as do nodes whose readers ask for different orders.

Before them, rewrite 0a (layout_phases.py, run first by the lowering) reads a strided stem over its
stride's phases, rewrite 0
pads a stem's few channels to a chunk and rewrite 0b gives a conv that reads a graph input (a lone
KernelBench conv, a model's first layer) an explicit copy of it to relay: one transposing pass.

`EMBER_CONTRACTION_LAYOUTS=0` turns both off; `=1` turns them on for any target (the CPU tests use
it to check the rewritten graphs against the reference).
"""
from __future__ import annotations

import os

import numpy as np

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..symbolic.assume import conjuncts
from ..view import View, index_name, row_major_strides
from .builder import unflatten
from .contraction import is_gemm_shaped, product_operands
from .node_args import reduce_axes, view_of

HALF = (dt.bfloat16, dt.float16)
CHUNK_BYTES = 16  # a vector load / a TMA stride unit: the innermost axis must fill whole chunks


def enabled(target) -> bool:
    flag = os.environ.get("EMBER_CONTRACTION_LAYOUTS")
    if flag is not None:
        return flag == "1"
    return target is not None and "wgmma" in getattr(target, "tensor_cores", ())


def contraction_layouts(roots: list, target) -> list:
    """The graph with rewrites 1 and 2 applied (the same nodes where none applies)."""
    if not enabled(target):
        return roots
    roots = _rebuild(roots, _padded_channels)
    roots = _rebuild(roots, _copied_inputs)
    roots = _rebuild(roots, _flipped_constants)
    roots = _rebuild(roots, _reordered_sum)
    order = g.toposort(roots)
    requests = _layout_requests(order, set(roots))
    if not requests:
        return roots
    return _rebuild(roots, lambda old, new: _relaid(new, requests[old]) if old in requests else new)


def _static(shape) -> bool:
    return all(s.is_const for s in shape)


def _leaf(op: g.Node) -> g.Node:
    """A contraction operand under its casts: the view node the rewrites replace."""
    while op.op == g.CAST:
        op = op.srcs[0]
    return op


def _copy(x: g.Node) -> g.Node:
    """An explicit copy of x (a same-type cast), materialised where a GEMM reads it (kernel/prologue.py)."""
    return g.Node(g.CAST, (x,), None, x.dtype, x.shape)


def _operand_type(op: g.Node):
    while op.op == g.CAST:
        op = op.srcs[0]
    return op.dtype


def _chunked_contraction(n: g.Node) -> tuple | None:
    """The operands of n when it is a static-shaped GEMM-shaped sum of 16-bit products, or of
    float32 products (TF32 or 3xTF32 in `wgmma`, where both operands must be K-major anyway), else
    None."""
    ops = product_operands(n)
    if ops is None or not is_gemm_shaped(n) or not _static(n.srcs[0].shape):
        return None
    types = {_operand_type(op) for op in ops}
    if not (types <= set(HALF) or types == {dt.float32}):
        return None
    return ops


def _element_bytes(ops) -> int:
    return max(_operand_type(op).itemsize for op in ops)


# ---------------------------------------------------------------- rewrite 0
def _padded_channels(old: g.Node, n: g.Node) -> g.Node:
    """A windowed contraction whose plainly read summed axis (a stem conv's 3 RGB channels) is no
    whole 16-byte chunk, summed over that axis padded with zeros to one (8 bf16): both operands'
    sources padded (a constant at compile time, anything else by a copy the lowering stages,
    kernel/prologue.py), so rewrites 1 and 2 make it a channels-last conv whose operand rows are
    whole chunks: `wgmma` with a chunked gather instead of `mma.sync` over scalar loads. Exact: the
    added terms are zeros. At most 3x the products (C >= 3)."""
    ops = _chunked_contraction(n)
    if ops is None or not any(_windowed(op, n) for op in ops):
        return n
    prod = n.srcs[0]
    for a in reduce_axes(n):
        C, es = prod.shape[a].value, _element_bytes(ops)
        Cp = -(-C * es // CHUNK_BYTES) * CHUNK_BYTES // es
        if Cp == C or Cp > 3 * C:
            continue
        leaves = {}
        for op in ops:
            padded = _padded_operand(op, index_name(a), C, Cp)
            if padded is None:
                break
            leaves[padded[0]] = padded[1]
        else:
            return g.reduce_node(g.SUM, _with_leaves(prod, leaves), reduce_axes(n), tf32=g.is_tf32(n))
    return n


def _padded_operand(op: g.Node, var: str, C: int, Cp: int):
    """(the operand's view node, the same view over its source padded to Cp along the axis var
    walks, widened to Cp), or None: var must walk one plain axis of length C one element at a
    time, no other variable may walk it, nor may the view's guard mention var."""
    leaf = _leaf(op)
    view = _source_view(op)
    if view is None:
        return None
    x, v = view
    d = _axis_walked(v, var, x)
    if d is None or x.shape[d].value != C or var in sm.free_vars(v.valid):
        return None
    if any(_axis_of_step(_step(v, u), x) == d for u in sm.free_vars(v.index) - {var}):
        return None
    coords = _coords(v, x.shape)
    if coords is None or sm.free_vars(coords[d]) != {var} or not _is_var(coords[d], var):
        return None
    pads = [(0, 0)] * x.ndim
    pads[d] = (0, Cp - C)
    if x.op == g.DATA:
        data = x.arg
        assert isinstance(data, g.Data)
        xp = g.data_node(np.pad(data.array, pads), f"{data.name}.pad{Cp}", x.dtype)
    else:  # an explicit copy (a same-type cast), materialised where a GEMM reads it (kernel/prologue.py)
        pv = g.apply_view(x, lambda vw: vw.pad(pads))
        xp = _copy(pv)
    strides = row_major_strides(xp.shape)
    index = sm.sum_of([c * st for c, st in zip(coords, strides)])
    shape = list(v.shape)
    shape[_var_axis(v, var)] = sm.const(Cp)
    return leaf, g.view_node(xp, View(tuple(shape), index, v.valid))


# ---------------------------------------------------------------- rewrite 0b
COPY_REUSE = 32  # products per element of the copied source that pay for the copy's two passes
COPY_REUSE_MN = 128  # the same for an unwindowed TF32 operand (NetVLAD's input, read 32 times, is not copied)
COPY_MN = os.environ.get("EMBER_COPY_MN_INPUTS", "0")
COPY_MIN_PRODUCTS = 1 << 22  # below this the copy's launch costs more than the layout saves
COPY_WEIGHTS = os.environ.get("EMBER_COPY_INPUT_WEIGHTS", "1")  # "0": never copy graph-input weights (see below)


def _copied_inputs(old: g.Node, n: g.Node) -> g.Node:
    """A windowed contraction reading a source rewrite 2 cannot relay (a graph input: the caller
    owns its layout) with the channels it sums off the innermost axis, reading instead an explicit
    copy of it (a same-type cast, materialised where the GEMM reads it, kernel/prologue.py), which
    rewrite 2 then stores channels-last: one transposing pass (cuDNN makes the same NCHW -> NHWC
    copy) buys a `wgmma` conv with whole-chunk rows. Only where every element is read at least
    COPY_REUSE times (a conv with a kernel window and enough output channels) and the conv is not
    tiny (COPY_MIN_PRODUCTS).

    Also a TF32 contraction (torch's precision for float32) reading a graph input with the summed
    axis between its rows (a 1x1 conv over the caller's NCHW tensor: n outside the channels, h, w
    inside) where each element is read COPY_REUSE_MN times: TF32 `wgmma` has no transposed form,
    so that operand was gathered a float at a time (KernelBench's pointwise conv, 0.46x eager on
    the H100); copied channels-last, both operands are TMA copies. Not yet timed on a GPU, so off
    unless EMBER_COPY_MN_INPUTS=1 (the copy is an elementwise transpose, its reads strided)."""
    ops = _chunked_contraction(n)
    if ops is None:
        return n
    windowed = any(_windowed(op, n) for op in ops)
    if not windowed and not (COPY_MN == "1" and g.is_tf32(n) and {_operand_type(op) for op in ops} == {dt.float32}):
        return n
    prod = n.srcs[0]
    shape = prod.shape
    long = [a for a in reduce_axes(n) if shape[a].value > 1]
    if not long:
        return n
    kv = index_name(_innermost_summed(long, shape, _element_bytes(ops)))
    products = int(np.prod([s.value for s in shape]))
    if products < COPY_MIN_PRODUCTS:
        return n
    copied: dict = {}
    for op in ops:
        view = _source_view(op)
        # only the window's own operand: NetVLAD's batched product has a flattened b * N + n axis that
        # passes for a window, and its other operand, the input, was copied unchanged
        if view is None or (windowed and not _windowed(op, n)):
            continue
        x, v = view
        reuse = COPY_REUSE if windowed else COPY_REUSE_MN
        if _relayable(x) or products < reuse * int(np.prod([s.value for s in x.shape])):
            continue
        if not windowed:  # (a 1x1 conv's input: its rows on both sides of the channels)
            d = _axis_walked(v, kv, x)
            if d is None or not _rows_around(n, v, _source_view(next(o for o in ops if o is not op)), x, d):
                continue
        if _order_for(v, kv, x) is None:
            continue
        copied[_leaf(op)] = (op, g.view_node(_copy(x), v))
    if not copied:
        return n
    # the copy pays only if the other operand can be read along the channels too: a constant, or
    # a graph input small beside the products (a training step's weights), copied the same way
    # (EMBER_COPY_INPUT_WEIGHTS=0 turns it off). Off until the im2col copies: then a float32 3x3 conv took
    # wgmma tf32x3 at 230 us against mma's 161 (gpu-session35-2026-11-28/e). With them, on an H200
    # (gpu-session40-2026-11-28/g): bf16 3x3 convs 65 -> 146 TFLOP/s (64 ch, 56^2), 16 -> 262 (256 ch, 14^2),
    # VGG's 256 ch 86 -> 363; TF32 121 -> 73 us (resnet 64 ch) and 859 -> 363 (KernelBench 32's shape)
    for op in ops:
        if any(op is o for o, _ in copied.values()) or _can_walk(op, kv):
            continue
        view = _source_view(op)
        if view is None or COPY_WEIGHTS != "1" or products < COPY_REUSE * int(np.prod([s.value for s in view[0].shape])):
            return n
        x, v = view
        if _order_for(v, kv, x) is None:
            return n
        copied[_leaf(op)] = (op, g.view_node(_copy(x), v))
    leaves = {leaf: view for leaf, (_, view) in copied.items()}
    return g.reduce_node(g.SUM, _with_leaves(prod, leaves), reduce_axes(n), tf32=g.is_tf32(n))


# ---------------------------------------------------------------- rewrite 0c
def _flipped_constants(old: g.Node, n: g.Node) -> g.Node:
    """A contraction reading a constant backwards along an axis (a transposed conv's weights: the
    taps walked from the last, kh - 1 - r) reads instead the constant flipped along it, forwards:
    a copy engine's strides cannot be negative, and rewrite 2 can then store it K-major for TMA.
    Exact (the same elements, renamed)."""
    ops = _chunked_contraction(n)
    if ops is None:
        return n
    leaves = {}
    for op in ops:
        view = _source_view(op)
        if view is None or view[0].op != g.DATA:
            continue
        x, v = view
        coords = _coords(v, x.shape)
        if coords is None:
            continue
        back = [d for d, c in enumerate(coords) if _walks_backwards(c)]
        if not back:
            continue
        data = x.arg
        assert isinstance(data, g.Data)
        xf = g.data_node(np.ascontiguousarray(np.flip(data.array, tuple(back))), f"{data.name}.flip{''.join(map(str, back))}",
                         x.dtype)
        flipped = [(x.shape[d].value - 1) - c if d in back else c for d, c in enumerate(coords)]
        index = sm.sum_of([c * st for c, st in zip(flipped, row_major_strides(x.shape))])
        leaves[_leaf(op)] = g.view_node(xf, View(v.shape, index, v.valid))
    if not leaves:
        return n
    return g.reduce_node(g.SUM, _with_leaves(n.srcs[0], leaves), reduce_axes(n), tf32=g.is_tf32(n))


def _walks_backwards(c) -> bool:
    """Whether coordinate c is a constant minus variables (every variable's coefficient negative)."""
    if c.is_const:
        return False
    if c.op == "add":
        return all(k < 0 for _, k in c.args[1])
    return False


def _is_var(e, var: str) -> bool:
    """Whether e is the variable itself (0 at var = 0, one step per step)."""
    zero = sm.substitute(e, {var: sm.ZERO})
    X = sm.var(var, 0, None)
    step = sm.substitute(e, {var: X + 1}) - sm.substitute(e, {var: X})
    return zero.is_const and zero.value == 0 and step.is_const and step.value == 1


def _var_axis(v: View, var: str) -> int:
    return next(d for d in range(len(v.shape)) if index_name(d) == var)


def _with_leaves(x: g.Node, leaves: dict) -> g.Node:
    """The product x rebuilt with its view leaves replaced (through casts and the product)."""
    if x in leaves:
        return leaves[x]
    if x.op == g.VIEW:  # an operand left as it is
        return x
    if x.op == g.CAST:
        return g.cast_node(_with_leaves(x.srcs[0], leaves), x.dtype)
    if x.op == g.MUL:
        return g.binary(g.MUL, _with_leaves(x.srcs[0], leaves), _with_leaves(x.srcs[1], leaves))
    raise AssertionError(f"a contraction's product over {x.op}")  # (product_operands accepted it)


# ---------------------------------------------------------------- rewrite 1
def _reordered_sum(old: g.Node, n: g.Node) -> g.Node:
    """n (old rebuilt) with its longest summed axis moved to the last summed position."""
    ops = _chunked_contraction(n)
    if ops is None:
        return n
    axes = list(reduce_axes(n))
    shape = n.srcs[0].shape
    long = [a for a in axes if shape[a].value > 1]
    if len(long) < 2 or not any(_windowed(op, n) for op in ops):
        return n
    best = _innermost_summed(long, shape, _element_bytes(ops))
    if best == long[-1]:
        return n
    moved = [a for a in axes if a != best] + [best]  # summed axes in their new order
    perm = list(range(len(shape)))
    for pos, a in zip(axes, moved):
        perm[pos] = a
    prod = _permuted(n.srcs[0], perm)
    kv = index_name(axes[-1])
    if not all(_can_walk(op, kv) for op in product_operands(g.reduce_node(g.SUM, prod, axes)) or ()):
        return n
    return g.reduce_node(g.SUM, prod, axes, tf32=g.is_tf32(n))


def _innermost_summed(long: list, shape, es: int) -> int:
    """The summed axis to walk innermost: the longest of those whose extent fills whole 16-byte
    chunks (a float32 stem's channels padded to 4 beat its 11 kernel columns), else the longest;
    ties: the later axis (already innermost)."""
    return max(long, key=lambda a: ((shape[a].value * es) % CHUNK_BYTES == 0, shape[a].value, a))


def _can_walk(op: g.Node, kv: str) -> bool:
    """Whether operand op can be read contiguously along kv once rewrite 2 has run: it already is,
    or its source is one rewrite 2 may store in another order (not a graph input: a conv's weights
    passed as an input keep the (c, kh, kw) order their flat loads read)."""
    view = _source_view(op)
    return view is not None and (_relayable(view[0]) or _step(view[1], kv) == 1)


def _permuted(x: g.Node, perm: list) -> g.Node:
    """x with its axes permuted, pushed through casts and the product to the operands' views (so
    the contraction still reads as a sum of a product of views)."""
    if x.op == g.CAST:
        return g.cast_node(_permuted(x.srcs[0], perm), x.dtype)
    if x.op == g.MUL:
        return g.binary(g.MUL, _permuted(x.srcs[0], perm), _permuted(x.srcs[1], perm))
    return g.apply_view(x, lambda v: v.permute(perm))


# ---------------------------------------------------------------- rewrite 2
def _layout_requests(order: list, outputs: set) -> dict:
    """node -> axis order L (X' = X permuted by L) for the sources contractions read with their
    innermost summed variable off the source's innermost axis: a constant always (free), a computed
    node where that axis sits between axes the operand's own rows walk (a conv's NCHW input: rows
    n outside the channels and h, w inside; no strided run of rows, so no TMA either way) — not a
    GEMM operand stored transposed (x.T @ g) or attention's V, whose rows are one run or a batch.
    A node asked for two orders keeps its own."""
    asked: dict = {}
    for n in order:
        ops = _chunked_contraction(n)
        if ops is None:
            continue
        shape = n.srcs[0].shape
        long = [a for a in reduce_axes(n) if shape[a].value > 1]
        if not long:
            continue
        kv = index_name(long[-1])
        for op, other in ((ops[0], ops[1]), (ops[1], ops[0])):
            view = _source_view(op)
            if view is None or view[0] in outputs:
                continue
            x, v = view
            L = _order_for(v, kv, x)
            if L is None or (x.op != g.DATA and not _rows_around(n, v, _source_view(other), x, L[-1])
                             and not _sums_inside(n, v, x, L[-1])):
                continue
            asked.setdefault(x, set()).add(tuple(L))
    out = {x: list(next(iter(ls))) for x, ls in asked.items() if len(ls) == 1 and _relayable(x)}
    _propagate(order, out, outputs)
    return out


def _propagate(order: list, out: dict, outputs: set) -> None:
    """A relaid node's sources follow it (latest first, so the order travels up a chain): where the
    relaid node's new innermost variable walks a plain axis of a source that is not innermost there,
    the source is asked for that axis last too (a max pool read by a conv: the pool, then the stem's
    ReLU it pools, then the stem conv's output all channels-last, so no kernel transposes)."""
    for x in reversed(order):
        L = out.get(x)
        if L is None or x.op == g.DATA:
            continue
        var = index_name(L[-1])
        for y, v in _views_read(x.srcs):
            if y in out or y in outputs or not _relayable(y) or y.op == g.DATA:
                continue
            L2 = _order_for(v, var, y)
            if L2 is not None:
                out[y] = L2


def _order_for(v: View, var: str, x: g.Node) -> list | None:
    """The axis order of x with the axis the view's variable walks (one element at a time) last,
    or None: not a plain axis, already innermost, or its rows would not be whole 16-byte chunks."""
    d = _axis_walked(v, var, x)
    if d is None or all(s.value == 1 for s in x.shape[d + 1:]) or (x.shape[d].value * x.dtype.itemsize) % CHUNK_BYTES:
        return None
    return [a for a in range(x.ndim) if a != d] + [d]


def _views_read(srcs, depth: int = 0):
    """(source, view) pairs that elementwise expressions over srcs read through views (inlined
    elementwise nodes share their reader's coordinates: the walk goes through them)."""
    for s in srcs:
        view = _source_view(s)
        if view is not None:
            yield view
        elif s.op in g.ELEMENTWISE and depth < 16:
            yield from _views_read(s.srcs, depth + 1)


def _source_view(op: g.Node):
    """(source, view) of a contraction operand read through a view (under casts), else None."""
    while op.op == g.CAST:
        op = op.srcs[0]
    return (op.srcs[0], view_of(op)) if op.op == g.VIEW and _static(op.srcs[0].shape) else None


def _step(v: View, var: str):
    return v.step(var)  # (memoised: asked for every operand on every rewrite pass)


def _axis_of_step(step, x: g.Node) -> int | None:
    """The axis of x a step of `step` elements moves along: the outermost whose stride divides it."""
    if not step:
        return None
    strides = [s.value for s in row_major_strides(x.shape)]
    return next((d for d in range(x.ndim) if x.shape[d].value > 1 and step % strides[d] == 0), None)


def _axis_walked(v: View, var: str, x: g.Node) -> int | None:
    """The axis of x that the view's variable walks one element at a time, or None."""
    step = _step(v, var)
    d = _axis_of_step(step, x)
    return d if d is not None and step == row_major_strides(x.shape)[d].value else None


def _row_vars(n: g.Node, v: View, other) -> list:
    """The output variables of contraction n this operand reads and the other does not (its rows)."""
    axes = set(reduce_axes(n))
    mine = sm.free_vars(v.index)
    theirs = sm.free_vars(other[1].index) if other is not None else set()
    return [index_name(a) for a in range(n.ndim) if a not in axes and index_name(a) in mine - theirs]


def _rows_around(n: g.Node, v: View, other, x: g.Node, d: int) -> bool:
    axes = [_axis_of_step(_step(v, r), x) for r in _row_vars(n, v, other)]
    return any(a is not None and a < d for a in axes) and any(a is not None and a > d for a in axes)


def _sums_inside(n: g.Node, v: View, x: g.Node, d: int) -> bool:
    """Whether every axis of x inside d is walked by a summed variable of n (a conv's weights copied
    from an input, [O, C, kh, kw] summed over C, kh, kw): stored with d last, the operand's k row is
    one contiguous run, a plain GEMM operand. Not a transposed GEMM operand or attention's V, whose
    inner axes are rows."""
    axes = set(reduce_axes(n))
    summed = {_axis_of_step(_step(v, index_name(a)), x) for a in axes if index_name(a) in sm.free_vars(v.index)}
    inside = [a for a in range(d + 1, x.ndim) if x.shape[a].value > 1]
    return bool(inside) and all(a in summed for a in inside)


def _windowed(op: g.Node, n: g.Node) -> bool:
    """Whether the operand reads one axis of its source with a summed and an output variable (a
    conv's window: h = oh * stride + kh), where reordering the summed axes changes which is walked."""
    view = _source_view(op)
    return view is not None and _window_view(n, *view)


def _window_view(n: g.Node, x: g.Node, v: View) -> bool:
    """Whether view v of x reads one axis of x with both a summed and an output variable of n."""
    axes, names = set(reduce_axes(n)), sm.free_vars(v.index)
    k_axes = {_axis_of_step(_step(v, index_name(a)), x) for a in axes if index_name(a) in names}
    out_axes = {_axis_of_step(_step(v, index_name(a)), x) for a in range(n.ndim) if a not in axes and index_name(a) in names}
    return bool((k_axes & out_axes) - {None})


def _relayable(x: g.Node) -> bool:
    return x.op == g.DATA or x.op in g.ELEMENTWISE or x.op in g.REDUCE


def _relaid(x: g.Node, L: list) -> g.Node:
    """x computed in axis order L, read back through the inverse permutation (same value)."""
    inv = [L.index(a) for a in range(len(L))]
    if x.op == g.DATA:
        data = x.arg
        assert isinstance(data, g.Data)
        xp = g.data_node(np.ascontiguousarray(data.array.transpose(L)), f"{data.name}.T{''.join(map(str, L))}", x.dtype)
    elif x.op in g.REDUCE:
        axes = [L.index(a) for a in reduce_axes(x)]
        src = _permuted(x.srcs[0], L)  # (through a contraction's product: it stays one)
        xp = g.reduce_node(x.op, src, axes, tf32=g.is_tf32(x))
    else:
        srcs = tuple(g.apply_view(s, lambda v: v.permute(L)) for s in x.srcs)
        xp = g.Node(x.op, srcs, x.arg, x.dtype, tuple(x.shape[a] for a in L))
    return g.view_node(xp, View.contiguous(xp.shape).permute(inv))


# ---------------------------------------------------------------- graph rebuild
def _rebuild(roots: list, rewrite) -> list:
    """The graph with each node rebuilt over its rebuilt sources, then passed to rewrite(old, new).
    A view over a rewritten source is composed with it (one view, as apply_view builds), so the
    partition still sees a view of the materialised node."""
    new: dict = {}
    for n in g.toposort(roots):
        srcs = tuple(new.get(s, s) for s in n.srcs)
        if srcs == n.srcs:
            m = n
        elif n.op == g.VIEW and srcs[0].op == g.VIEW:
            m = g.view_node(srcs[0].srcs[0], compose(view_of(srcs[0]), view_of(n)))
        else:
            m = g.Node(n.op, srcs, n.arg, n.dtype, n.shape)
        new[n] = rewrite(n, m)
    return [new[r] for r in roots]


def compose(inner: View, outer: View) -> View:
    """The view `outer` (over inner's shape, row-major) read through `inner`: one index expression.
    The outer index's coordinates in inner's shape come from its linear form where that is exact
    (`_coords`: a padded window's coordinates stay sums, no divisions), else from dividing it."""
    coords = _coords(outer, inner.shape) or unflatten(sm.assume(outer.index, outer.valid), inner.shape)
    m = {index_name(d): c for d, c in enumerate(coords)}
    idx = sm.assume(sm.substitute(inner.index, m), outer.valid)
    return View(outer.shape, idx, sm.logical_and(outer.valid, sm.substitute(inner.valid, m)))


def _coords(outer: View, shape: tuple) -> list | None:
    """Coordinates c_d with outer.index == sum(c_d * stride_d), each term of the index's linear form
    given to the outermost axis whose stride divides its coefficient, the constant split from the
    outermost axis in; None unless every c_d provably lies in [0, shape_d) wherever outer.valid
    holds (then they are *the* coordinates: the decomposition is unique there)."""
    if not _static(shape):
        return None
    strides = [s.value for s in row_major_strides(shape)]
    e = outer.index
    const, terms = (e.args[0], dict(e.args[1])) if e.op == "add" else \
        ((e.value, {}) if e.is_const else (0, {e: 1}))
    parts: list = [[] for _ in shape]
    for t, k in terms.items():
        d = next((d for d in range(len(shape)) if shape[d].value > 1 and k % strides[d] == 0), None)
        if d is None:
            return None
        parts[d].append(t * (k // strides[d]))
    coords = []
    for d, st in enumerate(strides):
        q = int(const / st)  # toward zero: -W - 1 is -1 row and -1 column
        const -= q * st
        coords.append(sm.sum_of(parts[d]) + q)
    if const:
        return None
    atoms = [a for a in conjuncts(outer.valid) if a.op == "lt"]
    for c, n in zip(coords, shape):
        if not (_holds(c, atoms) and _holds(n.value - 1 - c, atoms)):
            return None
    return coords


def _holds(e, atoms: list) -> bool:
    """e >= 0 by its bounds, or because a guard atom x < y says y - x - 1 >= 0 with e at least that."""
    if sm.prove_le(0, e):
        return True
    for a in atoms:
        x, y = a.args
        diff = e - (y - x - 1)
        if diff.is_const and diff.value >= 0:
            return True
    return False
