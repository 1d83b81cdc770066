"""Tiles 192 wide offered to the search where they fill the last wave of blocks better than the default's
(codegen/cuda_wgmma_space.py wave_tiles): a mid-size GEMM's tile count can leave a wave a quarter empty.
The offer on the CPU; the tiles rendered and compiled for sm_90a (CI); against the reference on the GPU
(marked cuda): ragged sizes, both operand layouts."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.search.space import cuda_space

H100 = pipeline.get_target("h100")
WAVE = [{"mode": "wgmma", "BM": 128, "BN": 192, "stages": 5}, {"mode": "wgmma", "BM": 64, "BN": 192, "stages": 7},
        {"mode": "wgmma", "BM": 128, "BN": 192, "stages": 5, "persistent": True}]


def _linear(M, N, K, layout="nt"):
    x = em.input("x", (M, K), "bfloat16")
    return x @ (em.input("w", (N, K), "bfloat16").T if layout == "nt" else em.input("w", (K, N), "bfloat16"))


def _kernel(y):
    (k, _), = pipeline.lower([y.node], None, H100).kernels
    return k


def test_offered_where_the_last_wave_fills_better(monkeypatch):
    # (the default's rate table takes 128 x 192 itself since the forty-ninth: EMBER_WGMMA_WAVE192=0 leaves it to the search)
    monkeypatch.setenv("EMBER_WGMMA_WAVE192", "0")
    ff2 = cuda_space(_kernel(_linear(4096, 768, 3072)), "fast", H100)  # 96 tiles of 128 x 256 on 132 SMs
    assert {"mode": "wgmma", "BM": 128, "BN": 192, "stages": 5} in ff2
    square = cuda_space(_kernel(_linear(4096, 4096, 4096)), "fast", H100)  # whole waves already
    assert not any(c.get("BN") == 192 for c in square)


def _program(layout, cfg, device):
    y = _linear(300, 500, 200, layout)
    t = pipeline.get_target(device)
    lowered = pipeline.lower([y.node], None, t)
    cfgs = [cfg if cg.contraction_of(cg.canonical(k)) is not None else cg.default_config(k, t) for k, _ in lowered.kernels]
    return y, pipeline.build_program(lowered, device, None, "single", configs=cfgs, load=device == "cuda")


def test_wave_tiles_render_and_compile():
    pytest.importorskip("cuda.core")
    from tests.nvrtc_batch import compile_programs
    progs = [(_program(layout, cfg, "h100")[1].source, (layout, i)) for layout in ("nt", "nn") for i, cfg in enumerate(WAVE)]
    failures = compile_programs(progs)
    assert not failures, "\n".join(failures[:3])


@pytest.mark.cuda
@pytest.mark.parametrize("layout", ["nt", "nn"])
@pytest.mark.parametrize("i", range(len(WAVE)))
def test_cuda_wave_tiles_equal_the_reference(layout, i):
    y, prog = _program(layout, WAVE[i], "cuda")
    prog.executor.poison = True
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        ins = {"x": rng.standard_normal((300, 200)).astype(em.dtypes.bfloat16.np),
               "w": (rng.standard_normal((500, 200) if layout == "nt" else (200, 500)) / 8).astype(em.dtypes.bfloat16.np)}
        ref = np.asarray(em.reference([y], **ins)[0]).astype(np.float32)
        out = np.asarray(prog(**ins)).astype(np.float32)
        np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(ref).max())))
