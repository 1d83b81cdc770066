"""The guarded-rows form of the C renderer (codegen/c_guarded.py): an embedding's gradient and other
sums of `where(cond, x, 0)` whose condition ignores some outputs, against the reference."""
import numpy as np
import pytest

import ember as em
from tests.conftest import assert_close


@pytest.mark.parametrize("V,C,M,seed", [(37, 20, 90, 0), (5, 129, 33, 1), (64, 3, 2, 2), (100, 16, 257, 3)])
def test_embedding_gradient(V, C, M, seed):
    """Indices with repeats, rows never looked up (their gradient exactly 0), and a loss that
    weights every lookup differently."""
    rng = np.random.default_rng(seed)
    ids = em.input("ids", (M,), em.int32)
    W = em.input("W", (V, C))
    wts = em.input("wts", (M, C))
    loss = (em.embedding(ids, W) * wts).sum()
    gW = em.grad(loss, [W])[0]
    p = em.compile(gW, device="cpu")
    assert "accr_" in p.source, "the embedding gradient did not take the guarded form"
    ins = {"ids": rng.integers(0, V, M).astype(np.int32), "wts": rng.standard_normal((M, C)).astype(np.float32)}
    out = p(**ins)
    assert_close(out, em.reference(gW, **ins), "float32")
    unused = np.setdiff1d(np.arange(V), ins["ids"])
    assert np.all(out[unused] == 0)


def test_guarded_sum_with_an_epilogue():
    """A masked sum over rows whose mask reads only one output dim, then scaled and shifted."""
    rng = np.random.default_rng(4)
    lab = em.input("lab", (50,), em.int32)
    x = em.input("x", (50, 24))
    onehot = em.one_hot(lab, 7, em.float32)  # (50, 7)
    y = (onehot.transpose(0, 1) @ x) * 0.5 + 1.0  # per-class sums of rows: a one-hot contraction
    p = em.compile(y, device="cpu")
    ins = {"lab": rng.integers(0, 7, 50).astype(np.int32), "x": rng.standard_normal((50, 24)).astype(np.float32)}
    assert_close(p(**ins), em.reference(y, **ins), "float32")
