"""The wgmma knob `swap` (codegen/cuda_wgmma.py `wgmma_contraction`): a contraction with few rows (a conv
with 32 output channels) and many columns (its pixels) tiled the other way round — the pixels on the
tile's 128 rows, the channels on 32 columns (a 32-wide B tile) — where the default's 64-row tile is
half empty; and the 32-wide tile unswapped where the columns are the 32 (a channels-last conv's output
channels: DenseNet's growth rate). Planned, rendered, offered by the search and compiled for sm_90a
here; against the reference on the GPU (marked cuda): odd sizes, a bias in the epilogue, bf16 and
TF32, two seeds."""
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


def test_a_64_row_tile_is_the_narrowest():
    lowered = pipeline.lower([_conv3d("bfloat16").node], None, pipeline.get_target("h100"))
    k = _conv_kernel(lowered)
    with pytest.raises(cg.UnsupportedKernel):
        cg.render_kernel(k, {"mode": "wgmma", "BM": 32, "BN": 64, "stages": 4})


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


N32 = [{"mode": "wgmma", "BM": 128, "BN": 32, "stages": 6, "persistent": True},
       {"mode": "wgmma", "BM": 64, "BN": 32, "stages": 8}]


def _conv_chain(dtype):
    """Two 3x3 convs, 16 -> 32 -> 32 channels: the first one's output is stored channels-last for the
    second to gather, so its contraction has the pixels on the rows and 32 columns."""
    rng = np.random.default_rng(1)
    x = em.input("x", (2, 16, 13, 22), dtype)
    w1 = em.tensor((rng.standard_normal((32, 16, 3, 3)) / 12).astype(np.float32)).cast(dtype)
    b1 = em.tensor(rng.standard_normal(32).astype(np.float32)).cast(dtype)
    w2 = em.tensor((rng.standard_normal((32, 32, 3, 3)) / 12).astype(np.float32)).cast(dtype)

    def chain():
        return em.conv2d(em.relu(em.conv2d(x, w1, bias=b1, padding=1)), w2, padding=1)
    if dtype == "float32":
        with em.allow_tf32():
            return chain()
    return chain()


def _first_conv(lowered):
    ks = [k for k, _ in lowered.kernels if cg.contraction_of(cg.canonical(k)) is not None]
    assert len(ks) == 2
    g = cg.contraction_of(cg.canonical(ks[0]))
    assert cg._size(g.n).value == 32 and cg._size(g.m).value == 2 * 13 * 22, "the first conv is not channels-last"
    return ks[0]


@pytest.mark.parametrize("flag,mode", [("0", "mma"), ("1", "wgmma"), (None, "wgmma")])
def test_32_columns_take_the_narrow_tile_by_flag(monkeypatch, flag, mode):
    big = em.input("x", (4, 16, 40, 40), "bfloat16")
    w1 = em.tensor(np.ones((32, 16, 3, 3), np.float32)).cast("bfloat16")
    w2 = em.tensor(np.ones((32, 32, 3, 3), np.float32)).cast("bfloat16")
    y = em.conv2d(em.relu(em.conv2d(big, w1, padding=1)), w2, padding=1)
    if flag is None:  # on by default since the forty-second session
        monkeypatch.delenv("EMBER_WGMMA_N32", raising=False)
    else:
        monkeypatch.setenv("EMBER_WGMMA_N32", flag)
    t = pipeline.get_target("h100")
    lowered = pipeline.lower([y.node], None, t)
    k = [k for k, _ in lowered.kernels if cg.contraction_of(cg.canonical(k)) is not None][0]
    cfg = cg.default_config(k, t)
    assert cfg["mode"] == mode and (mode == "mma" or (cfg["BN"] == 32 and not cfg.get("swap"))), cfg
    space = wgmma_configs(cg.canonical(k), "full", t)
    assert any(cf["BN"] == 32 and not cf.get("swap") for cf in space)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_narrow_unswapped_compiles_for_sm90a(dtype):
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    lowered = pipeline.lower([_conv_chain(dtype).node], None, pipeline.get_target("h100"))
    k = _first_conv(lowered)
    t = pipeline.get_target("h100")
    for cfg in N32:
        cfgs = [cfg if kk is k else cg.default_config(kk, t) for kk, _ in lowered.kernels]
        prog = pipeline.build_program(lowered, "h100", None, "single", configs=cfgs, load=False)
        assert all(len(c) > 0 for c in compile_kernels(prog.source, "sm_90a").values()), cfg


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("cfg", N32, ids=["128x32p", "64x32"])
def test_narrow_unswapped_matches_the_reference_on_the_gpu(dtype, cfg):
    from ember.precision import TF32_TOL
    y = _conv_chain(dtype)
    lowered = pipeline.lower([y.node], None, pipeline.get_target("cuda"))
    k = _first_conv(lowered)
    t = pipeline.get_target("cuda")
    cfgs = [cfg if kk is k else cg.default_config(kk, t) for kk, _ in lowered.kernels]
    prog = pipeline.build_program(lowered, "cuda", None, "single", configs=cfgs, load=True)
    prog.executor.poison = True
    npdt = em.dtypes.as_dtype(dtype).np
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal((2, 16, 13, 22)).astype(npdt)
        out = np.asarray(prog(x=x), np.float64)
        ref = np.asarray(em.reference([y], x=x)[0], np.float64)
        err = np.abs(out - ref).max() / np.abs(ref).max()
        assert err < (2e-2 if dtype == "bfloat16" else 2 * TF32_TOL), f"{cfg} seed {seed}: {err}"
