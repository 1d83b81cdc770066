"""Split long reductions that produce few values (a loss's mean over every element) into a partial
reduction over S chunks and a short final one, before partitioning.

One kernel computing a handful of values from millions of inputs runs on a handful of blocks: on
the H100 a 16M-element MSE took 16 ms in one block against 0.8 ms for PyTorch. Split, the partial
stage reads the input with S * outputs blocks in parallel and the final stage reduces S values.
The reduced axes are moved last and flattened (a view: index arithmetic, no copy), so sums over any
set of axes split the same way. The search has the same rewrite as an e-graph rule with other
factors (search/rules.py: split-reduction); this pass makes it the default for the cases where not
splitting is always slow.

Contractions split the same way (split-K) when their output is too small to give a GPU's SMs work
and their reduction is long: VGG's classifier, (32 x 32768) @ (32768 x 512), is 4 to 8 output
tiles; split in 64, it runs as 64 times as many tiles of a batched GEMM (the chunk index is a batch
dimension both operands read), then a short sum over the chunks (with the epilogue fused into it).
A TF32 mark (ember/precision.py) stays on the partial contraction.
"""
from __future__ import annotations

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..view import index_name

SPLIT_MIN_LEN = 1 << 16  # reductions at least this long ...
SPLIT_MAX_OUT = 64  # ... into at most this many values
CHUNKS = (1024, 512, 256, 128, 64)  # S: the first that divides the length, with >= MIN_CHUNK per chunk
MIN_CHUNK = 1024


# split-K: a contraction with fewer than TILES_FEW tiles of TILE outputs (fewer blocks than an H100
# has SMs) and a reduction of at least K_SPLIT_MIN is split into the fewest power-of-two chunks (each
# >= K_CHUNK_MIN long) that give TILES_WANTED tiles (about two per SM). A tensor-core tile with one
# block per SM issues an instruction every ~4 cycles (ncu: one warp per scheduler, nothing to hide
# its latencies), so its time is its k loop's length: a decoder block's (256 x 1344) @ (1344 x 512)
# took 48 us on 32 SMs. Measured on the H100 (bench/results/split-k-2026-11-22f.json): with these
# constants the batch-64 MLP 32.0 -> 17.7 us, a 256-token decoder block 195 -> 159 us; split where
# chunks are 64 long, or up to 264 tiles, the GRU and LSTM loops lost 20%.
TILE = 64 * 64
TILES_FEW = 132
TILES_WANTED = 256
K_SPLIT_MIN = 512
K_CHUNK_MIN = 128


def _is_contraction(n: g.Node) -> bool:
    """A sum of a product whose two operands are each broadcast along some output axis (a GEMM's
    shape: matmul, conv). A sum of an elementwise product (cross entropy's one-hot times
    log-probabilities) has no such axes and splits, if at all, as a plain reduction."""
    x = n.srcs[0]
    while x.op == g.CAST:
        x = x.srcs[0]
    if n.op != g.SUM or x.op != g.MUL or x.srcs[0] is x.srcs[1]:
        return False
    kept = [d for d in range(x.ndim) if d not in n.arg and not (x.shape[d].is_const and x.shape[d].value == 1)]

    def broadcast_axes(op: g.Node) -> set:
        while op.op == g.CAST:
            op = op.srcs[0]
        if op.op != g.VIEW:
            return set()
        used = sm.free_vars(op.arg.index)
        return {d for d in kept if index_name(d) not in used}

    a, b = (broadcast_axes(s) for s in x.srcs)
    return bool(a) and bool(b) and a != b


def _chunks(n: g.Node, L: int) -> int | None:
    outs = n.numel.value
    if _is_contraction(n):
        tiles = -(-outs // TILE)
        if L < K_SPLIT_MIN or tiles >= TILES_FEW:
            return None
        S = 2
        while tiles * S < TILES_WANTED and L % (2 * S) == 0 and L // (2 * S) >= K_CHUNK_MIN:
            S *= 2
        return S if L % S == 0 and L // S >= K_CHUNK_MIN else None
    if L < SPLIT_MIN_LEN or outs > SPLIT_MAX_OUT:
        return None
    return next((s for s in CHUNKS if L % s == 0 and L // s >= MIN_CHUNK), None)


# A float32 accumulator adding ones stops counting at 2**24 (x + 1 == x there), and its rounding
# error grows with the number of terms: no float32 accumulator sums more than this many terms. A
# longer float sum is split in ceil(L / 2**24) chunks (the reduced axis padded with zeros to a
# multiple), and the sum of the chunks again if there are still too many (issue 18: a 10**12-element
# sum was silently wrong); the chunks' partial sums are added in float64. float64 sums accumulate
# in float64 and are left alone.
F32_EXACT_TERMS = 1 << 24


def _f32_accumulated(n: g.Node) -> bool:
    return n.op == g.SUM and n.dtype.is_float and n.dtype.itemsize <= 4


def _split_exact(n: g.Node, src: g.Node, axes: tuple, L: int) -> g.Node:
    S = -(-L // F32_EXACT_TERMS)
    if n.numel.value <= SPLIT_MAX_OUT:  # few values: as many chunks as _chunks would give, for parallelism
        S = max(S, CHUNKS[0])
    C = -(-L // S)
    keep = [i for i in range(src.ndim) if i not in axes]
    kept = [src.shape[i] for i in keep]
    pad = [(0, 0)] * len(keep) + [(0, S * C - L)]
    v = g.apply_view(src, lambda vw: vw.permute(keep + list(axes)).reshape(kept + [sm.const(L)]).pad(pad)
                     .reshape(kept + [sm.const(S), sm.const(C)]))
    inner = g.reduce_node(g.SUM, v, (len(keep) + 1,), tf32=g.is_tf32(n))
    # the chunks' sum (S values, short) accumulates in float64: partial sums of 2**24 ones added in
    # float32 would round again
    outer = g.reduce_node(g.SUM, g.cast_node(inner, dt.float64), (len(keep),))
    return g.apply_view(g.cast_node(outer, n.dtype), lambda vw: vw.reshape(n.shape))


def _split(n: g.Node) -> g.Node | None:
    src = n.srcs[0]
    axes = tuple(n.arg)
    if not all(s.is_const for s in src.shape):
        return None
    L = 1
    for a in axes:
        L *= src.shape[a].value
    S = _chunks(n, L)
    if _f32_accumulated(n) and L // (S or 1) > F32_EXACT_TERMS:
        return _split_exact(n, src, axes, L)
    if S is None:
        return None
    keep = [i for i in range(src.ndim) if i not in axes]
    order = keep + list(axes)
    shape = [src.shape[i] for i in keep] + [sm.const(S), sm.const(L // S)]
    v = g.apply_view(src, lambda vw: vw.permute(order).reshape(shape))
    inner = g.reduce_node(n.op, v, (len(keep) + 1,), tf32=g.is_tf32(n))
    outer = g.reduce_node(n.op, inner, (len(keep),))
    return g.apply_view(outer, lambda vw: vw.reshape(n.shape))


def split_long_reductions(outputs: list) -> list:
    """The graph with every long, few-output reduction split (the same nodes where none is)."""
    new: dict = {}
    for n in g.toposort(outputs):
        srcs = tuple(new.get(s, s) for s in n.srcs)
        m = n if srcs == n.srcs else g.Node(n.op, srcs, n.arg, n.dtype, n.shape)
        if m.op in g.REDUCE:
            m = _split(m) or m
        new[n] = m
    return [new[o] for o in outputs]
