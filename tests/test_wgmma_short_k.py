"""A short k loop (<= 4 slices a tile) over more tiles than SMs runs its default wgmma tile persistent
(codegen/cuda_wgmma_default.py short_k_persistent): both operands copied by TMA, 16-bit, an epilogue that
loads nothing. The default's choice on the CPU; its program against the reference on the GPU (marked cuda):
a ragged row count, k not a multiple of the slice, two seeds."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen import cuda_wgmma_default

H100 = pipeline.get_target("h100")


def _gemm(M=4100, N=2000, K=192, bias=False):
    y = em.input("x", (M, K), "bfloat16") @ em.input("w", (N, K), "bfloat16").T
    return y + em.input("b", (N,), "bfloat16") if bias else y


def _defaults(y, target=H100):
    return [cg.default_config(k, target) for k, _ in pipeline.lower([y.node], None, target).kernels]


def test_short_k_runs_persistent(monkeypatch):
    (cfg,) = _defaults(_gemm())
    assert cfg["mode"] == "wgmma" and cfg.get("persistent"), cfg
    (conv,) = _defaults(em.conv2d(em.input("x", (8, 64, 56, 56), "bfloat16"), em.input("w", (256, 64, 1, 1), "bfloat16")))
    assert conv["mode"] == "wgmma" and conv.get("persistent"), conv
    monkeypatch.setattr(cuda_wgmma_default, "SHORT_K_PERSISTENT", False)
    assert not _defaults(_gemm())[0].get("persistent")


def test_not_where_k_is_long_the_epilogue_loads_or_the_tiles_are_few():
    assert not _defaults(_gemm(K=768))[0].get("persistent")  # 12 slices
    assert not [c for c in _defaults(_gemm(bias=True)) if c["mode"] == "wgmma"][0].get("persistent")  # (swide's staged walk)
    assert not _defaults(_gemm(M=256, N=256))[0].get("persistent")  # 4 tiles


@pytest.mark.cuda
def test_cuda_short_k_default_equals_the_reference():
    y = _gemm()
    prog = em.compile(y, device="cuda")
    assert any(l.config.get("persistent") for l in prog.launches)
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((4100, 192)).astype(em.dtypes.bfloat16.np)
        w = (rng.standard_normal((2000, 192)) / 8).astype(em.dtypes.bfloat16.np)
        ref = np.asarray(em.reference([y], x=x, w=w)[0]).astype(np.float32)
        out = np.asarray(prog(x=x, w=w)).astype(np.float32)
        np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(ref).max())))
