"""The counter-based random primitive PHILOX: ``philox(seed, counter)`` -> a uniform float32 in [0, 1).

Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the
generator of cuRAND and of torch's CUDA dropout) is a keyed bijection of a 128-bit counter: ten rounds of
two 32x32->64-bit multiplies, xors with the key and a Weyl-sequence key schedule. It passes BigCrush
(TestU01) with a wide safety margin (the paper finds 6 rounds enough; 10 is the standard). Being a pure
function of (key, counter), every element is computed independently, in any order, on any device, with
the same bits: the reference (numpy, here), the C and the CUDA renderings agree exactly.

Mapping used by Ember: key = (low, high 32 bits of seed), counter = (low, high 32 bits of counter, 0, 0);
the first output word's top 24 bits, times 2^-24, are the sample — every value k·2^-24 (k < 2^24) is
exact in float32 and in float64, so the reference's float64 value rounds to the same float32.

In the graph PHILOX is a binary elementwise op over two int64 tensors (a seed, usually a broadcast
constant, and a counter, usually the flat element index from an IOTA): `ember.ops.random.rand` builds
it. It has no gradient (its sources are integers).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from . import GraphError, Primitive, register

PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57  # round multipliers
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85  # key schedule increments (golden ratio, sqrt(3) - 1)
PHILOX_ROUNDS = 10
_LO = np.uint64(0xFFFFFFFF)


def philox4x32(counter: tuple, key: tuple, rounds: int = PHILOX_ROUNDS) -> tuple:
    """Philox4x32 of four uint32 counter words and two key words (numpy arrays or ints, broadcast):
    the four output words as uint64 arrays holding 32-bit values."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) & _LO for c in counter)
    k0, k1 = (np.asarray(k, np.uint64) & _LO for k in key)
    m0, m1, w0, w1 = (np.uint64(v) for v in (PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1))
    s32 = np.uint64(32)
    for _ in range(rounds):
        p0, p1 = m0 * c0, m1 * c2  # 32 x 32 -> 64 bits: no overflow in uint64
        c0, c1, c2, c3 = (p1 >> s32) ^ c1 ^ k0, p1 & _LO, (p0 >> s32) ^ c3 ^ k1, p0 & _LO
        k0, k1 = (k0 + w0) & _LO, (k1 + w1) & _LO
    return c0, c1, c2, c3


def philox_uniform(seed, counter) -> np.ndarray:
    """Uniform [0, 1) samples (float64 holding float32-exact values) for int64 seeds and counters."""
    s = np.asarray(seed).astype(np.int64).view(np.uint64) if np.ndim(seed) else np.uint64(int(seed) & (2**64 - 1))
    n = np.asarray(counter).astype(np.int64).view(np.uint64)
    s32 = np.uint64(32)
    w0, _, _, _ = philox4x32((n & _LO, n >> s32, 0, 0), (s & _LO, s >> s32))
    return (w0 >> np.uint64(8)).astype(np.float64) * 2.0 ** -24


def _dtype(seed: dt.DType, counter: dt.DType) -> dt.DType:
    if seed != dt.int64:
        raise GraphError(f"philox: seed and counter must be int64, got {seed.name}")
    return dt.float32


# The same algorithm as `philox4x32` in C, for both renderers ({fn}: "static inline" in C,
# "static __device__ __forceinline__" in CUDA). unsigned int is 32 bits on both; the 64-bit products
# give the high and low words exactly as the reference computes them.
_HELPER = r"""
{fn} float em_philox_uniform(long long seed, long long counter) {
  unsigned long long s = (unsigned long long)seed, n = (unsigned long long)counter;
  unsigned int c0 = (unsigned int)n, c1 = (unsigned int)(n >> 32), c2 = 0u, c3 = 0u;
  unsigned int k0 = (unsigned int)s, k1 = (unsigned int)(s >> 32);
  for (int r = 0; r < 10; ++r) {
    unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    unsigned int t1 = c1, t3 = c3;
    c0 = (unsigned int)(p1 >> 32) ^ t1 ^ k0; c1 = (unsigned int)p1;
    c2 = (unsigned int)(p0 >> 32) ^ t3 ^ k1; c3 = (unsigned int)p0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return (float)(c0 >> 8) * 5.9604644775390625e-08f;
}
"""

PHILOX = register(Primitive(
    "philox", "binary", 2, dtype=_dtype, numpy=lambda n, seed, counter: philox_uniform(seed, counter),
    c="em_philox_uniform({x0}, {x1})", helper=_HELPER, cost=40))
