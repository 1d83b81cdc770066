"""Rule 4's exception for short windows (kernel/recompute.py `broadcast_read`, EMBER_WINDOW_INLINE=1, untimed):
a max pool over a cheap elementwise producer (BatchNorm + ReLU) recomputes the producer per read instead
of storing it to a padded buffer first; a conv over the same producer still stores it (its window reads
each element C_out kh kw times). Checked on the CPU against the reference, with and without."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.kernel import recompute


def _bn_relu_pool(dtype):
    x = em.input("x", (2, 8, 80, 80), dtype)
    rng = np.random.default_rng(0)
    scale = em.tensor(rng.uniform(0.5, 1.5, (1, 8, 1, 1)).astype(np.float32))
    shift = em.tensor(rng.standard_normal((1, 8, 1, 1)).astype(np.float32))
    h = (x.cast("float32") * scale + shift).relu().cast(dtype)
    return em.max_pool2d(h, 3, stride=2, padding=1), h


def _kernels(y):
    return [k.name for k, _ in pipeline.lower([y.node], None, pipeline.get_target("cpu")).kernels]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_pool_recomputes_its_cheap_producer_when_asked(monkeypatch, dtype):
    y, _ = _bn_relu_pool(dtype)
    before = _kernels(y)
    monkeypatch.setattr(recompute, "WINDOW_INLINE", True)
    after = _kernels(y)
    assert len(after) == len(before) - 1  # (the padded BatchNorm + ReLU buffer is gone)
    fn = em.compile(y, device="cpu")
    for seed in (0, 1):
        v = np.random.default_rng(seed).standard_normal((2, 8, 80, 80)).astype(em.dtypes.as_dtype(dtype).np)
        np.testing.assert_allclose(np.asarray(fn(x=v), np.float32), np.asarray(em.reference(y, x=v), np.float32), rtol=1e-6, atol=1e-6)


def test_a_conv_still_stores_its_input_activation(monkeypatch):
    monkeypatch.setattr(recompute, "WINDOW_INLINE", True)
    _, h = _bn_relu_pool("float32")
    h = (h * 1.5 + 0.25).tanh() * h  # (a producer of 5-16 operations: rule 4 stores it for a conv)
    w = em.tensor(np.random.default_rng(1).standard_normal((16, 8, 3, 3)).astype(np.float32))
    y = em.conv2d(h, w, padding=1)
    assert len(_kernels(y)) == 2  # (the activation, then the conv)
