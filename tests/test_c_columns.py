"""The columns form of the C backend (codegen/c_columns.py): reductions down columns — a sum over a
leading axis, a bias's gradient — keep a row of accumulators and stream rows contiguously."""
import numpy as np
import pytest

import ember as em
from ember.codegen import c as cc
from ember.kernel.lower import lower
from tests.conftest import assert_close


def _forms(y) -> list:
    return [cc.default_config(k)["form"] for k, _ in lower([y.node]).kernels]


CASES = {
    "sum axis 0, ragged block": lambda x: x.sum(0),
    "max axis 0": lambda x: x.max(0),
    "mean keepdim + a row": lambda x: x.mean(0, keepdim=True) + x[:1],
    "variance axis 0 (two stages)": lambda x: x.var(0),
    "sum with an epilogue": lambda x: (x.sum(0) * 0.1).tanh() * 3.0,
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_column_reductions_take_the_form_and_match(name, seed):
    x = em.input("x", (517, 1001))  # 1001 columns: three whole blocks of 256 and a partial one
    y = CASES[name](x)
    assert "columns" in _forms(y)
    fn = em.compile(y, device="cpu")
    xs = np.random.default_rng(seed).standard_normal((517, 1001)).astype(np.float32)
    assert_close(fn(x=xs), em.reference(y, x=xs), "float32", what=name)


def test_middle_axes_integers_half_and_symbolic_lengths():
    rng = np.random.default_rng(2)
    y = em.input("y", (7, 300, 33))
    for red in (lambda t: t.sum(1), lambda t: t.sum((0, 1))):
        out = red(y)
        assert "columns" in _forms(out)
        ys = rng.standard_normal((7, 300, 33)).astype(np.float32)
        assert_close(em.compile(out, device="cpu")(y=ys), em.reference(out, y=ys), "float32")
    i = em.input("i", (5000, 17), em.int32)
    iv = rng.integers(-5, 5, (5000, 17)).astype(np.int32)
    assert np.array_equal(em.compile(i.sum(0), device="cpu")(i=iv), iv.astype(np.int64).sum(0))
    b = em.input("b", (3000, 300), "bfloat16")
    bv = rng.standard_normal((3000, 300)).astype(em.dtypes.bfloat16.np)
    assert_close(em.compile(b.sum(0), device="cpu")(b=bv), bv.astype(np.float64).sum(0), "bfloat16")
    s = em.input("s", ("N", "M"))
    fn = em.compile(s.sum(0) * 2.0, device="cpu")
    for shape in ((1, 5), (2000, 513), (3, 256)):
        sv = rng.standard_normal(shape).astype(np.float32)
        assert_close(fn(s=sv), sv.astype(np.float64).sum(0) * 2.0, "float32", what=str(shape))


def test_rows_and_gathers_keep_their_forms():
    x = em.input("x", (64, 4096))
    assert "columns" not in _forms(x.sum(1))  # the reduced axis is the contiguous one
    ids = em.input("ids", (300,), em.int32)
    w = em.input("w", (50, 64))
    assert "columns" not in _forms(em.embedding(ids, w).sum(0))  # a gathered load


def test_a_linear_bias_gradient_is_a_column_sum():
    x, w, b = em.input("x", (256, 96)), em.input("w", (48, 96)), em.input("b", (48,))
    loss = (em.linear(x, w, b).tanh() ** 2).sum()
    gb, = em.grad(loss, [b])
    assert "columns" in _forms(gb)
    rng = np.random.default_rng(3)
    ins = {"x": rng.standard_normal((256, 96)).astype(np.float32), "w": rng.standard_normal((48, 96)).astype(np.float32) * 0.1,
           "b": rng.standard_normal(48).astype(np.float32)}
    assert_close(em.compile(gb, device="cpu")(**ins), em.reference(gb, **ins), "float32")
