"""Rewrite 0d of the contraction layouts (kernel/layout.py): a GEMM's operands copied into rows the
copy engine takes.

TMA copies a tile only where every stride it walks is a multiple of 16 bytes, and TF32 `wgmma`
reads float32 operands K-major only (it has no transposed form). A GEMM over ragged sizes (1031 x
3079 x 2053: no row of either operand starts on a 16-byte boundary) or over a float32 operand stored
[K, N] (`x @ W` in TF32) therefore had its operands gathered a float at a time by the producer, or
fell back to `mma` (KernelBench's 04_matmul_irregular: 0.70x eager on the H100). Here each such
operand is read instead from a copy that is K-major with its summed axis padded with zeros to whole
16-byte chunks (both operands padded alike, so the added products are zeros: exact):

    sum_k a[m, k] * b[k, n]  ==  sum_{k < Kp} a'[m, k] * b'[n, k],   a' = pad(a), b' = pad(b).T

A constant is padded and transposed at compile time; anything else by one copy (a same-type cast,
materialised where the GEMM reads it, kernel/prologue.py) — but not an operand computed from a
reduction (softmax's probabilities: attention's flash kernel never stores them). Only plain
(unwindowed) GEMMs whose products number at least COPY_MIN_PRODUCTS, reading each copied element
at least COPY_REUSE times.
On by default (EMBER_COPY_GEMM_OPERANDS=0 turns it off): measured on the H100 in one run
(bench/results/gpu-session36-2026-11-28/b/), the project's 04 (1031 x 3079 x 2053) 0.69 -> 0.78x eager,
the real KernelBench's 8 (8205 x 2949 x 5921) 7.22 -> 4.07 ms, 0.89 -> 1.57x eager.
"""
from __future__ import annotations

import os

import numpy as np

from .. import dtypes as dt
from .. import graph as g
from ..view import index_name
from . import layout as L
from .node_args import reduce_axes
from .split import DEFAULT_POLICY as SPLIT_POLICY

ENABLED = os.environ.get("EMBER_COPY_GEMM_OPERANDS", "1")
# FLOPs per byte the GEMM moves (operands once, its output) below which it is memory-bound enough that
# a copy's two passes over an operand cost more than the layout saves. H100, TF32 1x1 convs over NCHW
# (bench/results/gpu-session36-2026-11-28/a/, the same copy): KernelBench's 87 (64 -> 128 channels, 21
# FLOP/B) 11.19 -> 12.29 ms, the project's 35 (256 -> 256, 64 FLOP/B) 0.292 -> 0.273
MIN_INTENSITY = 32
# TF32 products over an MN-major operand (x @ W with W stored [K, N], a 1x1 conv over NCHW): the wgmma
# producer transposes it from a staging ring (codegen/cuda_wgmma_staged.py) instead of this rewrite
# copying it K-major first (two more passes over it: the project's 35, 0.26 ms against eager's 0.11 on
# the H200). Off unless EMBER_WGMMA_TF32_STAGE=1: measured (gpu-session41-2026-11-28/a/), 35 0.294 -> 0.202 ms
# but a TF32 x @ W at 4096^3 275 -> 146 TFLOP/s and the real KernelBench's 87 8.96 -> 10.38 ms
TF32_STAGE = os.environ.get("EMBER_WGMMA_TF32_STAGE", "0") == "1"
# TF32 products with exactly one MN-major operand: left as it is stored, the wgmma kernel loading its tile's
# fragments into registers (the RS form, codegen/cuda_wgmma_rs.py; the default's tile from
# codegen/cuda_schedule.py rs_default) instead of this rewrite copying it K-major. On by default (EMBER_WGMMA_RS=0
# off); measured on an H200 (bench/results/gpu-session43-2026-11-29/): the project's 35_conv2d_pointwise 0.269 ->
# 0.114 ms (eager 0.11-0.14), real KB 87 8.95 -> 3.73 ms, 6_GoogleNetInceptionModule 12.8 -> 11.4, 21_EfficientNetMBConv
# 5.72 -> 5.35 (not persistent), a TF32 x @ W at 4096^3 268 -> 368 TFLOP/s (104% of cuBLAS TF32)
RS = os.environ.get("EMBER_WGMMA_RS", "1") == "1"
RS_MIN = 64  # k and each operand's rows (with its batch) at least this: the RS tile's (64 x 64 x 64 at the least)
# a 16-bit GEMM's columns over images (an NCHW 1x1 conv whose image is not whole 64-pixel chunks) with the images
# as a batch of the wgmma contraction, the input left as stored (codegen/cuda_wgmma.py outer_columns_as_batch).
# On by default (EMBER_WGMMA_COLUMN_BATCH=0: copied channels-last first): its CUDA tests pass on an H200, and
# ResNet-50's 512 -> 128 1x1 conv at 28^2 over NCHW took 75.2 -> 18.3 us (cuDNN 11.0; gpu-session48-2026-11-29/a/)
COLUMN_BATCH = os.environ.get("EMBER_WGMMA_COLUMN_BATCH", "1") == "1"
KPAD = 16  # k is padded to this many 16-byte chunks: a split over k (kernel/split.py, power-of-two
# parts of at least 128) still cuts it into whole chunks, which the copy engine takes


def aligned_gemm_layouts(roots: list, target) -> list:
    """The graph with rewrite 0d applied (after kernel/layout.py's rewrites, on the same targets)."""
    if ENABLED != "1" or not L.enabled(target):
        return roots
    return L._rebuild(roots, aligned_gemm_operands)


def aligned_gemm_operands(old: g.Node, n: g.Node) -> g.Node:
    """n with its operands read from padded K-major copies where the copy engine could not take
    them (see the module docstring); n itself where nothing needs one or a copy would not pay."""
    ops = L._chunked_contraction(n)
    if ops is None or any(L._windowed(op, n) for op in ops):
        return n
    prod = n.srcs[0]
    axes = reduce_axes(n)
    long = [a for a in axes if prod.shape[a].value > 1]
    if len(long) != 1:
        return n
    ka = long[0]
    kv, K = index_name(ka), prod.shape[ka].value
    es = L._element_bytes(ops)
    chunk = L.CHUNK_BYTES // es
    products = int(np.prod([s.value for s in prod.shape]))
    if products < L.COPY_MIN_PRODUCTS:
        return n
    f32 = {L._operand_type(op) for op in ops} == {dt.float32}
    views = [L._source_view(op) for op in ops]
    if any(v is None for v in views):
        return n
    tf32 = f32 and g.is_tf32(n)
    needing = [x for x, v in views if _needs_copy(x, v, kv, tf32, es)]
    # whole chunks; from the length kernel/split.py may cut into parts (up to 16 of 128 or more) whole
    # groups of KPAD chunks, so each part is whole chunks too (K = 64 had been padded to 128: twice the products)
    step = chunk if K < SPLIT_POLICY.k_min else KPAD * chunk
    Kp = -(-K // step) * step
    # (the RS tile wants 64 k and 64 rows a side, codegen/cuda_schedule.py rs_default: a conv with 32 output
    # channels keeps its copy and the narrow tile)
    kept = _rs_operand(views, kv, es) if RS and tf32 and Kp == K and K >= RS_MIN and all(
        int(np.prod([s.value for s in x.shape])) >= RS_MIN * K for x, _ in views) else None
    needing = [x for x in needing if x is not kept]
    if not needing or any(_reads_reduction(x) for x in needing):
        # (an operand computed from a reduction is left to the gather: attention's probabilities,
        # 300 keys a row, stream through the flash kernel unstored, which a copy would break apart)
        return n
    for x, _ in views:
        if products < L.COPY_REUSE * int(np.prod([s.value for s in x.shape])):
            return n
    traffic = sum(int(np.prod([s.value for s in x.shape])) * x.dtype.itemsize for x, _ in views)
    if 2 * products < MIN_INTENSITY * (traffic + n.numel.value * n.dtype.itemsize):
        return n
    leaves = {}
    for op, (x, v) in zip(ops, views):
        leaf = L._leaf(op)
        if x is kept:  # (the RS form's operand, as stored)
            leaves[leaf] = leaf
            continue
        if Kp != K:
            padded = L._padded_operand(op, kv, K, Kp)
            if padded is None:
                return n
            view_node = padded[1]
        else:
            view_node = leaf
        xp, vp = L._source_view(view_node)
        order = L._order_for(vp, kv, xp)
        if xp.op != g.DATA and not (xp.op == g.CAST and xp.dtype == xp.srcs[0].dtype):  # (not already a copy)
            if order is None and not _misaligned(xp, es):
                leaves[leaf] = view_node
                continue
            xp = L._copy(xp)
        if order is not None:
            relaid = L._relaid(xp, order)
            view_node = g.view_node(relaid.srcs[0], L.compose(L.view_of(relaid), vp))
        else:
            view_node = g.view_node(xp, vp)
        leaves[leaf] = view_node
    return g.reduce_node(g.SUM, L._with_leaves(prod, leaves), axes, tf32=g.is_tf32(n))


def _reads_reduction(x: g.Node) -> bool:
    """Whether x is computed from a reduction anywhere below it (recompute.reads_reduction's walk, over
    the whole graph: no builder has materialised anything yet)."""
    seen, todo = set(), [x]
    while todo:
        y = todo.pop()
        if y not in seen and y.op not in g.LEAVES:
            seen.add(y)
            if y.op in g.REDUCE:
                return True
            todo.extend(y.srcs)
    return False


def _misaligned(x: g.Node, es: int) -> bool:
    """Whether a row of x (its innermost axis of more than one element: a 1x1 conv's [O, C, 1, 1]
    weights' rows are their C) is not a whole number of 16-byte chunks."""
    dims = [d.value for d in x.shape]
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return len(dims) >= 2 and (dims[-1] * es) % 16 != 0


def _k_innermost(x: g.Node, d: int) -> bool:
    """Whether axis d of x is its innermost of more than one element ([O, C, 1, 1] weights: C)."""
    return all(s.value == 1 for s in x.shape[d + 1:])


def _rs_operand(views: list, kv: str, es: int) -> g.Node | None:
    """The one operand of a TF32 GEMM whose summed axis is not innermost (the other's is), rows whole
    16-byte chunks: the RS form loads it as stored (RS above). None where there is not exactly one."""
    walked = [(x, L._axis_walked(v, kv, x)) for x, v in views]
    mn = [x for x, d in walked if d is None or not _k_innermost(x, d)]
    if any(d is None for _, d in walked):  # (not a plain axis: the gather's business)
        return None
    return mn[0] if len(mn) == 1 and not _misaligned(mn[0], es) else None


def _needs_copy(x: g.Node, v, kv: str, tf32: bool, es: int) -> bool:
    """Whether the copy engine cannot take this operand as it is stored: its rows are not whole
    16-byte chunks, or (TF32) its summed axis is not innermost. A 16-bit operand whose summed axis is
    not innermost has rows of the axes after it, merged (an NCHW 1x1 conv's input: an image's 28 x 28
    pixels, 1568 bytes): whole chunks there, the wgmma kernel takes it with the images as a batch
    (codegen/cuda_wgmma.py outer_columns_as_batch, COLUMN_BATCH)."""
    d = L._axis_walked(v, kv, x)
    if d is None:
        return False  # (not a plain axis: the gather's business)
    if tf32 and d != x.ndim - 1 and not TF32_STAGE:
        return True
    if COLUMN_BATCH and not tf32 and es == 2 and d < x.ndim - 1 and \
            (int(np.prod([s.value for s in x.shape[d + 1:]])) * es) % 16 == 0:
        return False
    return _misaligned(x, es)
