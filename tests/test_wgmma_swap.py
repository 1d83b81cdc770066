"""The wgmma knob `swap` (codegen/cuda_wgmma.py `wgmma_contraction`): a contraction with few rows (a conv
with 32 output channels) and many columns (its pixels) tiled the other way round — the pixels on the
tile's 128 rows, the channels on 32 columns (a 32-wide B tile) — where the default's 64-row tile is
half empty. Planned, rendered, offered by the search and compiled for sm_90a here; against the
reference on the GPU (marked cuda): odd sizes, a bias in the epilogue, bf16 and TF32, two seeds."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen.cuda_wgmma_space import wgmma_configs

SWAPS = [{"mode": "wgmma", "BM": 128, "BN": 32, "stages": 4, "swap": True},
         {"mode": "wgmma", "BM": 64, "BN": 32, "stages": 6, "swap": True, "persistent": True},
         {"mode": "wgmma", "BM": 128, "BN": 64, "stages": 4, "swap": True}]


def _conv3d(dtype):
    rng = np.random.default_rng(0)
    x = em.input("x", (2, 16, 7, 13, 22), dtype)
    w = em.tensor((rng.standard_normal((32, 16, 3, 3, 3)) / 12).astype(np.float32)).cast(dtype)
    b = em.tensor(rng.standard_normal(32).astype(np.float32)).cast(dtype)
    if dtype == "float32":
        with em.allow_tf32():
            return em.conv3d(x, w, bias=b, padding=1)
    return em.conv3d(x, w, bias=b, padding=1)


def _conv_kernel(lowered):
    ks = [k for k, _ in lowered.kernels if cg.contraction_of(cg.canonical(k)) is not None]
    assert len(ks) == 1
    return ks[0]


def _build(y, cfg, device):
    lowered = pipeline.lower([y.node], None, pipeline.get_target(device))
    k = _conv_kernel(lowered)
    t = pipeline.get_target(device)
    cfgs = [cfg if kk is k else cg.default_config(kk, t) for kk, _ in lowered.kernels]
    return k, pipeline.build_program(lowered, device, None, "single", configs=cfgs, load=device == "cuda")


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_swap_puts_the_pixels_on_the_rows(dtype):
    lowered = pipeline.lower([_conv3d(dtype).node], None, pipeline.get_target("h100"))
    c = cg.canonical(_conv_kernel(lowered))
    g, s = cg.contraction_of(c), cg.wgmma_contraction(c, swap=True)
    assert s.m == g.n and s.n == g.m and s.a is g.b and s.b is g.a
    plan = cg.wgmma_applicable(c, swap=True)
    assert not isinstance(plan, str) and plan[1].extent == "M_"  # (the gathered input now feeds A)
    space = wgmma_configs(c, "full", pipeline.get_target("h100"))
    assert any(cf.get("swap") and cf["BN"] == 32 for cf in space)


def test_a_32_wide_tile_only_swapped():
    lowered = pipeline.lower([_conv3d("bfloat16").node], None, pipeline.get_target("h100"))
    k = _conv_kernel(lowered)
    with pytest.raises(cg.UnsupportedKernel):
        cg.render_kernel(k, {"mode": "wgmma", "BM": 128, "BN": 32, "stages": 4})


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_swap_compiles_for_sm90a(dtype):
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    for cfg in SWAPS:
        _, prog = _build(_conv3d(dtype), cfg, "h100")
        assert all(len(c) > 0 for c in compile_kernels(prog.source, "sm_90a").values()), cfg


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("cfg", SWAPS, ids=["128x32", "64x32p", "128x64"])
def test_swap_matches_the_reference_on_the_gpu(dtype, cfg):
    from ember.precision import TF32_TOL
    y = _conv3d(dtype)
    _, prog = _build(y, cfg, "cuda")
    prog.executor.poison = True
    npdt = em.dtypes.as_dtype(dtype).np
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal((2, 16, 7, 13, 22)).astype(npdt)
        out = np.asarray(prog(x=x), np.float64)
        ref = np.asarray(em.reference([y], x=x)[0], np.float64)
        err = np.abs(out - ref).max() / np.abs(ref).max()
        assert err < (2e-2 if dtype == "bfloat16" else TF32_TOL), f"{cfg} seed {seed}: {err}"
