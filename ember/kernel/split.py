"""Split long reductions that produce few values (a loss's mean over every element) into a partial
reduction over S chunks and a short final one, before partitioning.

One kernel computing a handful of values from millions of inputs runs on a handful of blocks: on
the H100 a 16M-element MSE took 16 ms in one block against 0.8 ms for PyTorch. Split, the partial
stage reads the input with S * outputs blocks in parallel and the final stage reduces S values.
The reduced axes are moved last and flattened (a view: index arithmetic, no copy), so sums over any
set of axes split the same way. The search's e-graph rule (search/rules.py: split-reduction) calls
`search_splits` here with wider thresholds; this pass makes the split the default where not
splitting is always slow. The thresholds come from the Target (`SplitPolicy`).

Contractions split the same way (split-K) when their output is too small to give a GPU's SMs work
and their reduction is long: VGG's classifier, (32 x 32768) @ (32768 x 512), is 4 to 8 output
tiles; split in 64, it runs as 64 times as many tiles of a batched GEMM (the chunk index is a batch
dimension both operands read), then a short sum over the chunks (with the epilogue fused into it).
A TF32 mark (ember/precision.py) stays on the partial contraction.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from .contraction import gemm_rows, is_gemm_shaped, walks_columns
from .node_args import reduce_axes


@dataclass(frozen=True)
class SplitPolicy:
    """The pass's thresholds; each Target carries its own (backends/target.py). The defaults are the
    values measured on the H100.

    Plain reductions: at least `min_len` long into at most `max_out` values split into the first of
    `chunks` (S) that divides the length with at least `min_chunk` per chunk. One kernel computing a
    few values from millions of inputs runs on a few blocks (a 16M-element MSE: 16 ms -> 0.4 ms).

    Contractions (split-K): fewer than `tiles_few` output tiles of `tile` elements (fewer blocks than
    the GPU has SMs) with k >= `k_min` split into the fewest power-of-two chunks (each >= `k_chunk_min`
    long) that give `tiles_wanted` tiles (about two per SM). A tensor-core tile with one block per SM
    issues an instruction every ~4 cycles (ncu: one warp per scheduler, nothing to hide its
    latencies), so its time is its k loop's length: a decoder block's (256 x 1344) @ (1344 x 512)
    took 48 us on 32 SMs. Measured on the H100 (bench/results/split-k-2026-11-22f.json): with these
    values the batch-64 MLP 32.0 -> 17.7 us, a 256-token decoder block 195 -> 159 us; split where
    chunks are 64 long, or up to 264 tiles, the GRU and LSTM loops lost 20%.

    A long k loop (>= `k_long`) over one to two waves of tiles (`tiles_few` to 2 x `tiles_few`)
    leaves most SMs idle in the second wave: it splits in `long_chunks` (a training step's weight
    gradient, 1376 x 512 outputs over 8192 tokens: 176 blocks of one k loop each ran at 22 TFLOP/s
    in `mma`; in tf32x3 `wgmma` split in 4 / 8 / 16 it ran at 37 / 42 / 30 TFLOP/s,
    bench/results/gpu-session18-2026-11-26/h-f32-dW-chunks*.json).

    A matrix-vector product walking its matrix along the outputs (`x @ W`, W stored [K, N]: one output
    per lane), or any reduction whose inputs walk the outputs (a norm's weight gradient over 8192
    tokens into 512 outputs: 16 blocks, 370 us in a training step), with fewer than `tiles_few` blocks
    of 32 outputs and k >= `gemv_k_min` splits the same way into chunks >= `gemv_chunk_min`, the
    chunk index outermost so the partial kernel still walks the outputs: (1 x 8192) @ (8192 x 2048)
    ran on 64 blocks at 1.24 TB/s on the H100 (bench/results/contractions-devtime-2026-11-25.json).
    The CUDA target splits finer (`gemv_*` in backends/cuda_target.py): k >= 1024 in chunks >= 256
    toward 2048 blocks, below 1024 blocks — swept on the H100 (bench/gemv_sweep.py,
    bench/results/gpu-session19-2026-11-26/j/gemv-sweep.json): 2048 x 8192 2.65 -> 3.01 TB/s,
    8192 x 2048 2.23 -> 2.93 (cuBLAS 3.35 / 3.09, graph replays).

    The search's split rule (search/rules.py) explores more splits than the default makes: single-axis
    reductions at least `search_min_len` long into at most `search_max_out` values, in the first of
    `search_chunks` that divides."""
    min_len: int = 1 << 16
    max_out: int = 64
    chunks: tuple = (1024, 512, 256, 128, 64)
    min_chunk: int = 1024
    tile: int = 64 * 64
    tiles_few: int = 132
    tiles_wanted: int = 256
    k_min: int = 512
    k_chunk_min: int = 128
    search_min_len: int = 4096
    search_max_out: int = 1024
    search_chunks: tuple = (64, 128, 32)
    gemv_k_min: int = 4096
    gemv_chunk_min: int = 1024
    gemv_wanted: int = 256  # blocks of 32 outputs the split aims for
    rows_gemv: int = 0  # GEMMs of at most this many rows are not split (the target runs them as GEMVs)
    gemv_few: int = 0  # at or above this many blocks no split (0: tiles_few)
    k_long: int = 4096
    long_chunks: int = 8
    long_k_cluster: bool = False  # 16-bit long k loops left to the target's cluster split (long_k_split)


DEFAULT_POLICY = SplitPolicy()
# EMBER_SPLIT_LONG_K=0: no split of a long k loop over one to two waves of 64 x 64 tiles (the `long_chunks` rule). A
# target with `long_k_cluster` keeps a 16-bit GEMM's long k loop whole: its wgmma default splits it over a cluster of
# blocks summed through shared memory (codegen/cuda_wgmma_kcluster.py; the Llama-1B prefill's down projection 49.1 ->
# 36.2 us on an H200), unless EMBER_WGMMA_KCLUSTER=0 (then the split here, as before). Both read at each call.
def long_k_split(n: g.Node | None = None, p: SplitPolicy | None = None) -> bool:
    if os.environ.get("EMBER_SPLIT_LONG_K", "1") != "1":
        return False
    kept = p is not None and p.long_k_cluster and n is not None and n.dtype.is_float and n.dtype.itemsize == 2
    return not (kept and os.environ.get("EMBER_WGMMA_KCLUSTER", "1") == "1")


def _chunks(n: g.Node, L: int, p: SplitPolicy) -> int | None:
    outs = n.numel.value
    if walks_columns(n):  # x @ W over W [K, N], a column sum: outputs / 32 blocks of one output per lane
        blocks = -(-outs // 32)
        if L < p.gemv_k_min or blocks >= (p.gemv_few or p.tiles_few):
            return None
        S = 2
        while blocks * S < p.gemv_wanted and L % (2 * S) == 0 and L // (2 * S) >= p.gemv_chunk_min:
            S *= 2
        return S if L % S == 0 and L // S >= p.gemv_chunk_min else None
    if is_gemm_shaped(n):
        rows = gemm_rows(n)
        if rows is not None and rows <= p.rows_gemv:
            return None  # (GEMVs shared by the rows, codegen/cuda_rows.py: one weight row per warp)
        tiles = -(-outs // p.tile)
        if p.tiles_few <= tiles < 2 * p.tiles_few and L >= p.k_long and L % p.long_chunks == 0 and long_k_split(n, p):
            return p.long_chunks  # (the second wave's idle SMs)
        if L < p.k_min or tiles >= p.tiles_few:
            return None
        S = 2
        while tiles * S < p.tiles_wanted and L % (2 * S) == 0 and L // (2 * S) >= p.k_chunk_min:
            S *= 2
        return S if L % S == 0 and L // S >= p.k_chunk_min else None
    if L < p.min_len or outs > p.max_out:
        return None
    return next((s for s in p.chunks if L % s == 0 and L // s >= p.min_chunk), None)


def reduced_length(n: g.Node) -> int | None:
    """The number of elements each output of reduction `n` reduces, when static."""
    src = n.srcs[0]
    if not all(s.is_const for s in src.shape):
        return None
    L = 1
    for a in reduce_axes(n):
        L *= src.shape[a].value
    return L


def split_reduction(n: g.Node, S: int, chunk_major: bool = False) -> g.Node:
    """`n` as a reduction over S chunks of a partial reduction: the reduced axes are moved last and
    flattened (a view), split into (S, L / S), reduced over the chunk, then over S. chunk_major: the
    chunk index leads the partial result's axes (its outputs stay the fastest-varying)."""
    src = n.srcs[0]
    axes = tuple(reduce_axes(n))
    L = reduced_length(n)
    assert L is not None, "split_reduction of a reduction of dynamic length"  # callers check it
    keep = [i for i in range(src.ndim) if i not in axes]
    order = keep + list(axes)
    shape = [src.shape[i] for i in keep] + [sm.const(S), sm.const(L // S)]
    K = len(keep)
    # a half-precision sum keeps its partial sums in float32, as one kernel's accumulator would
    # (stored in bfloat16 they would be rounded once more before the final sum)
    wide = n.op == g.SUM and n.dtype.is_float and n.dtype.itemsize < 4
    if chunk_major:  # (S, kept..., L / S)
        v = g.apply_view(src, lambda vw: vw.permute(order).reshape(shape).permute([K] + list(range(K)) + [K + 1]))
        red = (K + 1,), (0,)
    else:
        v = g.apply_view(src, lambda vw: vw.permute(order).reshape(shape))
        red = (K + 1,), (K,)
    if wide:
        v = g.cast_node(v, dt.float32)
    inner = g.reduce_node(n.op, v, red[0], tf32=g.is_tf32(n))
    outer = g.reduce_node(n.op, inner, red[1])
    if wide:
        outer = g.cast_node(outer, n.dtype)
    return g.apply_view(outer, lambda vw: vw.reshape(n.shape))


# A float32 accumulator adding ones stops counting at 2**24 (x + 1 == x there), and its rounding
# error grows with the number of terms: no float32 accumulator sums more than this many terms. A
# longer float sum is split in ceil(L / 2**24) chunks (the reduced axis padded with zeros to a
# multiple), and the sum of the chunks again if there are still too many (issue 18: a 10**12-element
# sum was silently wrong); the chunks' partial sums are added in float64. float64 sums accumulate
# in float64 and are left alone.
F32_EXACT_TERMS = 1 << 24


def _f32_accumulated(n: g.Node) -> bool:
    return n.op == g.SUM and n.dtype.is_float and n.dtype.itemsize <= 4


def _split_exact(n: g.Node, L: int, p: SplitPolicy) -> g.Node:
    src, axes = n.srcs[0], tuple(reduce_axes(n))
    S = -(-L // F32_EXACT_TERMS)
    if n.numel.value <= p.max_out:  # few values: as many chunks as _chunks would give, for parallelism
        S = max(S, p.chunks[0])
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


def _split(n: g.Node, p: SplitPolicy) -> g.Node | None:
    L = reduced_length(n)
    S = None if L is None else _chunks(n, L, p)
    if L is not None and _f32_accumulated(n) and L // (S or 1) > F32_EXACT_TERMS:
        return _split_exact(n, L, p)
    if S is None:
        return None
    return _split_on_axes(n, S, p) or split_reduction(n, S, chunk_major=walks_columns(n) or is_gemm_shaped(n))


def _split_on_axes(n: g.Node, S: int, p: SplitPolicy) -> g.Node | None:
    """A contraction over several axes split along its leading summed axes when their extents
    multiply to within a factor of 2 of S (a 3x3 conv's taps, its channels summed inside): the chunk
    index is then those axes themselves, no flattened k to divide, so a channels-last operand
    (kernel/layout.py) stays a strided load inside each chunk."""
    if walks_columns(n) or not is_gemm_shaped(n):
        return None
    src = n.srcs[0]
    axes = [a for a in reduce_axes(n) if src.shape[a].value > 1]
    L = reduced_length(n)
    best, P = None, 1
    for i, a in enumerate(axes[:-1]):
        P *= src.shape[a].value
        if S / 2 <= P <= 2 * S and L // P >= p.k_chunk_min and \
                (best is None or abs(P / S - 1) < abs(best[1] / S - 1)):
            best = (i + 1, P)
    if best is None:
        return None
    outer_axes, inner_axes = axes[:best[0]], axes[best[0]:]
    wide = n.dtype.is_float and n.dtype.itemsize < 4  # (partial sums in float32, as split_reduction)
    inner = g.reduce_node(g.SUM, g.cast_node(src, dt.float32) if wide else src, inner_axes, tf32=g.is_tf32(n))
    outer = g.reduce_node(g.SUM, inner, outer_axes)
    return g.cast_node(outer, n.dtype) if wide else outer


def split_long_reductions(outputs: list, policy: SplitPolicy | None = None, keep=None) -> list:
    """The graph with every long, few-output reduction split (the same nodes where none is);
    `keep(node)` may exempt reductions (a contraction the target streams: kernel/online.py)."""
    p = policy or DEFAULT_POLICY
    new: dict = {}
    for n in g.toposort(outputs):
        srcs = tuple(new.get(s, s) for s in n.srcs)
        m = n if srcs == n.srcs else g.Node(n.op, srcs, n.arg, n.dtype, n.shape)
        if m.op in g.REDUCE and not (keep is not None and keep(m)):
            m = _split(m, p) or m
        new[n] = m
    return [new[o] for o in outputs]


def search_splits(outputs: list, policy: SplitPolicy | None = None) -> list:
    """(reduction, its split form) pairs the search may try (search/rules.py: split-reduction): the
    single-axis reductions the policy's search thresholds admit."""
    p = policy or DEFAULT_POLICY
    out = []
    for n in g.toposort(outputs):
        if n.op not in g.REDUCE or len(reduce_axes(n)) != 1 or not n.numel.is_const:
            continue
        L = reduced_length(n)
        if L is None or L < p.search_min_len or n.numel.value > p.search_max_out:
            continue
        S = next((f for f in p.search_chunks if L % f == 0), None)
        if S is not None:
            out.append((n, split_reduction(n, S)))
    return out
