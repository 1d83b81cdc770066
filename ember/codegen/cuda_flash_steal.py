"""Flash-decoding's key tiles taken in turn by the cluster's warps (knob `steal`).

Traced on the H100 (docs/attention.md "The layer's phases"), a batch-1 layer's slowest block ends
~1 us after the median one: each block streams a fixed eighth of the keys, and the SMs' shares of
HBM differ. With `steal` the keys of a cluster's group are one pool of BN-key tiles: each warp's
first S - 1 tiles are fixed (warp g of the cluster: tiles g, g + C*W, ...; so they can still load
before the grid-dependency wait), and every later tile index comes from a counter in rank 0's
shared memory (`atom.shared::cluster.add`), asked for one iteration before it is needed so the
warp never waits on the atomic. Warps that get faster memory take more tiles; the cluster's warps
end within about one tile of each other. The partial triples are combined as before (each block's
warps over whatever tiles they took; the online softmax does not care about the order).

Only with the gathered combine (`gather`, a cluster without splits), keys-major products and the
`cp.async` ring: the counter is initialised by rank 0 before the split cluster barrier's arrive
(with release) and first used after its wait, which moves from the gather to before the loop.

Measured on the H100 (bench/results/gpu-session32-2026-11-27/j/): correct, and slower — the B 1 x 8K
key loop 10.2 -> 13.4 us at head dim 128 (16 layers 79 -> 64% of copy bandwidth), 32K 96 -> 76%:
the counter's atomics cost more than the blocks' imbalance saves. `steal` "static" keeps the
interleave without the counter (warp g: tiles g, g + C*W, ...): the loop as fast as the default's
(10.4 us against 10.2, m/), so the atomics were the cost; D 64 +1.7 points, D 128 -0.8 (m/, n/). Off.
"""
from __future__ import annotations


def steal_applicable(cfg: dict, C: int, P: int, kt: bool, mbar: bool) -> bool:
    return bool(cfg.get("steal")) and cfg.get("gather") and C > 1 and P == 1 and kt and not mbar and not cfg.get("pipe")


def emit_steal_counter(w, C: int, W: int, S: int, ind: int = 1) -> None:
    """Rank 0's tile counter, starting past the warps' fixed first tiles (before the cluster arrive)."""
    w.emit(ind, "__shared__ unsigned steal_;")
    w.emit(ind, f"if (rank_ == 0u && tid_ == 0) steal_ = {(S - 1) * C * W}u;")


def emit_steal_range(w, C: int, W: int, BN: int, ind: int = 1) -> None:
    """The cluster's whole key range as the pool (instead of this block's chunk) and the warp's
    index in the cluster."""
    I = w.IDX
    w.emit(ind, f"const {I} k0_ = kbeg_, k1_ = kend_;")
    w.emit(ind, f"const {I} ntk_ = (k1_ > k0_ ? (k1_ - k0_ + {BN - 1}) / {BN} : 0);  /* the cluster's key tiles, taken in turn */")
    w.emit(ind, f"const {I} gw_ = ({I})(rank_ * {W}u + (unsigned)warp_);")


def first_tile(steal: bool, i: int, C: int, W: int) -> str:
    """The warp's i-th fixed tile."""
    return f"gw_ + {i * C * W}" if steal else f"warp_ + {i * W}"


def emit_steal_loop_head(w, S: int, C: int, W: int, ind: int = 1) -> None:
    """Before the loop (every thread, after q is in shared memory): the cluster barrier's wait (the
    counter is initialised), the queue of the warp's next S - 2 fixed tiles, and the first index
    asked of the counter (lane 0; broadcast when used)."""
    I, e = w.IDX, w.emit
    e(ind, 'asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");  /* rank 0\'s counter is set */')
    e(ind, "const unsigned steal_at_ = em_cluster_addr(&steal_, 0u);")
    e(ind, "unsigned pend_ = 0u;")
    e(ind, 'if (lane_ == 0) asm volatile("atom.shared::cluster.add.u32 %0, [%1], 1;" : "=r"(pend_) : "r"(steal_at_) : "memory");')
    e(ind, f"{I} t_ = gw_;")
    for j in range(1, S - 1):
        e(ind, f"{I} u{j}_ = gw_ + {j * C * W};")


def emit_steal_next(w, ind: int) -> None:
    """At the top of an iteration: the tile index asked for last iteration (nt_: the one to load
    now), and the next one asked for."""
    I, e = w.IDX, w.emit
    e(ind, f"const {I} nt_ = ({I})__shfl_sync(0xffffffffu, pend_, 0);")
    e(ind, 'if (lane_ == 0) asm volatile("atom.shared::cluster.add.u32 %0, [%1], 1;" : "=r"(pend_) : "r"(steal_at_) : "memory");')


def emit_steal_shift(w, S: int, ind: int) -> None:
    """At the bottom of an iteration: the queue moves up one (the tile loaded this iteration last)."""
    e = w.emit
    if S == 2:
        e(ind, "t_ = nt_;")
        return
    e(ind, "t_ = u1_;")
    for j in range(1, S - 2):
        e(ind, f"u{j}_ = u{j + 1}_;")
    e(ind, f"u{S - 2}_ = nt_;")
