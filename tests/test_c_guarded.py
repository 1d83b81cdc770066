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
    """An embedding gradient scaled and shifted: the epilogue fuses into the guarded kernel's store."""
    rng = np.random.default_rng(4)
    ids, W, wts = em.input("ids", (50,), em.int32), em.input("W", (7, 24)), em.input("wts", (50, 24))
    y = em.grad((em.embedding(ids, W) * wts).sum(), [W])[0] * 0.5 + 1.0
    p = em.compile(y, device="cpu")
    assert "accr_" in p.source and len(p.launches) == 1
    ins = {"ids": rng.integers(0, 7, 50).astype(np.int32), "wts": rng.standard_normal((50, 24)).astype(np.float32)}
    assert_close(p(**ins), em.reference(y, **ins), "float32")


def test_cuda_guarded_mode_compiles_for_sm90():
    """The CUDA renderer's guarded mode (codegen/cuda_guarded.py) is the H100 preset's default for an
    embedding gradient, and NVRTC compiles it (CI compiles every generated kernel)."""
    pytest.importorskip("cuda.bindings")
    from ember.backends.cuda import compile_cuda
    for V, C, M in ((96, 512, 4096), (7, 3000, 33)):  # (3000 outputs a row: several chunks per point)
        ids, W, wts = em.input("ids", (M,), em.int32), em.input("W", (V, C)), em.input("wts", (M, C))
        gW = em.grad((em.embedding(ids, W) * wts).sum(), [W])[0]
        p = em.compile(gW, device="h100")
        assert [l.config.get("mode") for l in p.launches] == ["guarded"]
        assert len(compile_cuda(p.source, "sm_90a")) > 0


@pytest.mark.cuda
@pytest.mark.parametrize("V,C,M", [(96, 512, 4096), (7, 3000, 33), (5, 129, 1000)])
def test_cuda_embedding_gradient(V, C, M):
    rng = np.random.default_rng(V)
    ids, W, wts = em.input("ids", (M,), em.int32), em.input("W", (V, C)), em.input("wts", (M, C))
    gW = em.grad((em.embedding(ids, W) * wts).sum(), [W])[0]
    p = em.compile(gW, device="cuda")
    ins = {"ids": rng.integers(0, V, M).astype(np.int32), "wts": rng.standard_normal((M, C)).astype(np.float32)}
    assert_close(p(**ins), em.reference(gW, **ins), "float32")
