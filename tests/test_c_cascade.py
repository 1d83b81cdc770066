"""Cascaded float sums in the C backend (codegen/c_cascade.py): a long float32 sum is flushed into a
double every chunk, so its error no longer grows with the number of terms."""
import numpy as np
import pytest

import ember as em
from ember.codegen import c_cascade
from tests.conftest import assert_close


def _skewed(shape, seed):
    """ReLU of a shifted normal (mostly zeros, a long positive tail): the GroupNorm input of the real
    KernelBench's level-2 61, where a sequential float sum of a 78,608-element group lost 5.6e-4."""
    rng = np.random.default_rng(seed)
    return np.maximum(rng.standard_normal(shape) * 0.05 - 0.04, 0).astype(np.float32)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_group_statistics_over_78k_elements_are_accurate(seed):
    x = em.input("x", (4, 16, 34, 34, 34))
    xg = x.reshape([4, 8, 2, 34, 34, 34])
    mu = xg.mean((2, 3, 4, 5), keepdim=True)
    var = ((xg - mu) * (xg - mu)).mean((2, 3, 4, 5))
    p = em.compile([mu, var], device="cpu")
    assert c_cascade.hi("acc0") in p.source  # the sums took the cascaded form
    xs = _skewed((4, 16, 34, 34, 34), seed)
    m, v = (np.asarray(a, np.float64).reshape(4, 8) for a in p(x=xs))
    x64 = xs.astype(np.float64).reshape(4, 8, -1)
    mr = x64.mean(-1)
    vr = ((x64 - mr[..., None]) ** 2).mean(-1)
    # a float32 result rounded once, give or take the chunks' own float sums
    assert np.max(np.abs(m - mr) / mr) < 2e-6
    assert np.max(np.abs(v - vr) / vr) < 2e-6, np.max(np.abs(v - vr) / vr)


def test_long_innermost_loops_are_chunked_and_symbolic_lengths_too():
    rng = np.random.default_rng(3)
    x = em.input("x", (3, 100003))  # not a multiple of the chunk
    p = em.compile(x.sum(1) * 0.5, device="cpu")
    assert f"+= {c_cascade.CHUNK})" in p.source
    xs = _skewed((3, 100003), 4)
    assert_close(p(x=xs), xs.astype(np.float64).sum(1) * 0.5, "float32")
    t = em.input("t", (5, "T"))
    q = em.compile((t * 2.0).sum(1), device="cpu")  # a symbolic sum: cascaded, whatever its length
    assert c_cascade.hi("acc0") in q.source
    for n in (1, 1023, 1025, 5000):
        ts = rng.standard_normal((5, n)).astype(np.float32)
        assert_close(q(t=ts), (ts.astype(np.float64) * 2.0).sum(1), "float32", what=f"T = {n}")


def test_a_whole_kernel_sum_keeps_a_double_per_thread():
    x = em.input("x", (300001,))
    p = em.compile((x * x).sum(), device="cpu")
    xs = np.random.default_rng(5).standard_normal(300001).astype(np.float32)
    ref = (xs.astype(np.float64) ** 2).sum()
    assert abs(float(np.asarray(p(x=xs))) - ref) / ref < 2e-6


def test_short_sums_and_bf16_inputs():
    x = em.input("x", (64, 1000))
    assert c_cascade.hi("acc0") not in em.compile(x.sum(1), device="cpu").source  # < MIN_TERMS: one float
    b = em.input("b", (4, 70000), "bfloat16")
    p = em.compile(b.sum(1), device="cpu")
    bs = _skewed((4, 70000), 6).astype(em.dtypes.bfloat16.np)
    assert_close(p(b=bs), bs.astype(np.float64).sum(1), "bfloat16")
