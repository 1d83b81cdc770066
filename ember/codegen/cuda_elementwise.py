"""The elementwise mode: a grid-stride loop, each thread storing `vec` consecutive outputs per step.

Knob `unroll` (U > 1): each thread takes U vectors per step, U * threads apart, in one unrolled loop, so
the compiler issues their loads together (the buffers are `__restrict__`) and U loads are in flight per
thread instead of one. torch's vectorized elementwise kernels keep several in flight; Ember's plain maps
ran 0.91-0.97x eager on an H200 (relu, gelu, silu over 8192 x 16384 floats: one 16-byte load a thread,
bench/results/gpu-session37-2026-11-28/). Searched (search/space.py), off by default until timed
(EMBER_ELEMENTWISE_UNROLL=N: that many everywhere).
"""
from __future__ import annotations

import os

from .. import symbolic as sm
from ..kernel.structure import Canon, _size
from .cuda_schedule import _store_vec

UNROLL = int(os.environ.get("EMBER_ELEMENTWISE_UNROLL", "1"))


def render_elementwise(w, c: Canon, T: int, max_vec: int):
    """Emit the kernel body into writer `w`; returns the grid."""
    vec = _store_vec(w.k, c.store, c.outer, max_vec)
    U = int(w.cfg.get("unroll", UNROLL))
    n = _size(c.outer) // vec
    I = w.IDX
    w.emit(1, f"const {I} n_ = {w.idx(n)};")
    if U <= 1:
        w.emit(1, f"for ({I} c_ = ({I})blockIdx.x * {T} + threadIdx.x; c_ < n_; c_ += ({I})gridDim.x * {T}) {{")
        w.decompose(f"c_ * {vec}" if vec > 1 else "c_", c.outer, 2)
        w.store(c.store, c.outer[-1][0] if c.outer else None, vec, 2)
        w.emit(1, "}")
        return sm.minimum((n + (T - 1)) // T, 2 ** 31 - 1)
    w.emit(1, f"for ({I} c0_ = ({I})blockIdx.x * {T * U} + threadIdx.x; c0_ < n_; c0_ += ({I})gridDim.x * {T * U}) {{")
    # a whole step unguarded (straight-line: its loads issued together), the last one guarded
    for guarded in (False, True):
        w.emit(2, "} else {" if guarded else f"if (c0_ + {(U - 1) * T} < n_) {{")
        w.emit(3, f"#pragma unroll\n      for (int u_ = 0; u_ < {U}; ++u_) {{")
        w.emit(4, f"const {I} c_ = c0_ + u_ * {T};")
        if guarded:
            w.emit(4, "if (c_ >= n_) break;")
        w.decompose(f"c_ * {vec}" if vec > 1 else "c_", c.outer, 4)
        w.store(c.store, c.outer[-1][0] if c.outer else None, vec, 4)
        w.emit(3, "}")
    w.emit(2, "}")
    w.emit(1, "}")
    return sm.minimum((n + (T * U - 1)) // (T * U), 2 ** 31 - 1)
