"""Rewrite 3 of the contraction layouts (kernel/layout.py): a window's constant with its channels last.

A depthwise conv over channels-last activations (MobileNet's, EfficientNet's: rewrite 2 relays them) sums a
few taps per output, the channel its innermost output variable; its weights, a constant [C, 1, kh, kw], are
then read at stride kh * kw along the channels, so no lane can load several channels' weights in one vector
and the kernel runs a thread per output with scalar loads (project 04_mobilenetv2_blocks' 3x3 depthwise over
32 x 192 x 56^2: 184 us for 154 MB on an H200, gpu-session44-2026-11-29/f/). Stored [1, kh, kw, C] (a
compile-time transpose: the constant's value is unchanged, read back through the inverse permutation), every
load of the window walks the channels contiguously and the kernel takes the column mode's vector lanes.

Only for windows (a source read along one axis with both a summed and an output variable: the conv's input,
h = oh + kh), so a GEMM's constant keeps the layout rule 2 gave it (K-major for the tensor cores), and only for
constants (free); a computed or graph-input weight keeps its layout.
"""
from __future__ import annotations

import os

from .. import graph as g
from ..view import index_name
from .contraction import product_operands
from .layout import _order_for, _rebuild, _relaid, _source_view, _views_read, _window_view, enabled
from .node_args import reduce_axes


# Windows of fewer taps only: the column mode's lane-owned windows (codegen/cuda_schedule.py, `own`) take those;
# a longer one (EfficientNet's 5x5, 25 taps) went from a thread per output, unrolled, to the GEMV column form,
# slower: real KernelBench 22_EfficientNetB0's launches 2614 -> 2988 us with every window relaid (gpu-session44 h/)
MAX_TAPS = 16


def window_constant_layouts(roots: list, target) -> list:
    """The graph with every window's constant stored with the window's innermost output axis last
    (EMBER_WINDOW_CONSTANTS=0: as it was)."""
    if not enabled(target) or os.environ.get("EMBER_WINDOW_CONSTANTS", "1") != "1":
        return roots
    asked: dict = {}
    for n in g.toposort(roots):
        ops = product_operands(n)
        if ops is None or not _window(n):
            continue
        shape, axes = n.srcs[0].shape, set(reduce_axes(n))
        taps = 1
        for a in axes:
            taps *= shape[a].value if shape[a].is_const else 1 << 20
        if taps >= MAX_TAPS:
            continue
        outs = [a for a in range(len(shape)) if a not in axes and shape[a].is_const and shape[a].value > 1]
        if not outs:
            continue
        for op in ops:
            view = _source_view(op)
            if view is None or view[0].op != g.DATA:
                continue
            L = _order_for(view[1], index_name(outs[-1]), view[0])
            if L is not None:
                asked.setdefault(view[0], set()).add(tuple(L))
    out = {x: list(next(iter(ls))) for x, ls in asked.items() if len(ls) == 1}
    return _rebuild(roots, lambda old, new: _relaid(new, out[old]) if old in out else new) if out else roots


def _window(n: g.Node) -> bool:
    """Whether sum n reads some source (through its product and elementwise nodes: a padding's `where`) along
    one axis with both a summed and an output variable (a conv's input: h = oh * stride + kh)."""
    return any(_window_view(n, x, v) for x, v in _views_read(n.srcs))
