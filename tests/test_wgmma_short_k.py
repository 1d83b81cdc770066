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
    monkeypatch.setenv("EMBER_WGMMA_SHALF", "0")  # (knob shalf's default is persistent too: below)
    (cfg,) = _defaults(_gemm())
    assert cfg["mode"] == "wgmma" and cfg.get("persistent"), cfg
    (conv,) = _defaults(em.conv2d(em.input("x", (8, 64, 56, 56), "bfloat16"), em.input("w", (256, 64, 1, 1), "bfloat16")))
    assert conv["mode"] == "wgmma" and conv.get("persistent"), conv
    monkeypatch.setattr(cuda_wgmma_default, "SHORT_K_PERSISTENT", False)
    assert not _defaults(_gemm())[0].get("persistent")


def test_not_where_k_is_long_the_epilogue_loads_or_the_tiles_are_few(monkeypatch):
    monkeypatch.setenv("EMBER_WGMMA_SHALF", "0")
    assert not _defaults(_gemm(K=768))[0].get("persistent")  # 12 slices
    assert not [c for c in _defaults(_gemm(bias=True)) if c["mode"] == "wgmma"][0].get("persistent")  # (swide's staged walk)
    assert not _defaults(_gemm(M=256, N=256))[0].get("persistent")  # 4 tiles


@pytest.mark.cuda
def test_cuda_short_k_default_equals_the_reference():
    y = _gemm()
    prog = em.compile(y, device="cuda")
    assert any(l.config["cfg"].get("persistent") for l in prog.launches if "cfg" in l.config)
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((4100, 192)).astype(em.dtypes.bfloat16.np)
        w = (rng.standard_normal((2000, 192)) / 8).astype(em.dtypes.bfloat16.np)
        ref = np.asarray(em.reference([y], x=x, w=w)[0]).astype(np.float32)
        out = np.asarray(prog(x=x, w=w)).astype(np.float32)
        np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(ref).max())))


# knob `sown`: the staged epilogue in a buffer of its own after the ring, so a persistent tile stages its outputs
# (codegen/cuda_wgmma_epilogue.py)
SOWN = [{"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "persistent": True, "sown": True, "group": 8},
        {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 8, "persistent": True, "sown": True, "group": 8},
        {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "persistent": True, "sown": True, "swide": True},
        {"mode": "wgmma", "BM": 64, "BN": 64, "stages": 6, "sown": True},
        # knob `shalf`: staged as the 16-bit outputs (the epilogue, if any, computed in the registers first)
        {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "persistent": True, "sown": True, "shalf": True},
        {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 5, "persistent": True, "sown": True, "shalf": True, "group": 8}]
SOWN_GRAPHS = {
    "gemm": lambda: _gemm(M=1100, N=520, K=200),
    "gemm_bias_relu": lambda: em.relu(_gemm(M=1100, N=520, K=200, bias=True)),
    "gemm_bias_residual_gelu": lambda: em.gelu(_gemm(M=1100, N=520, K=200, bias=True) + em.input("r", (1100, 520), "bfloat16")),
    "conv1x1_nchw_f16": lambda: em.conv2d(em.input("x", (3, 72, 8, 24), "float16"), em.input("w", (136, 72, 1, 1), "float16")),
    # 12 x 12 images: a run of 8 outputs crosses image rows (shalf over the flattened columns, merged_runs)
    "conv1x1_nchw_12x12": lambda: em.conv2d(em.input("x", (3, 72, 12, 12), "bfloat16"), em.input("w", (136, 72, 1, 1), "bfloat16")),
}


def _sown_cases():
    return [(name, i) for name in SOWN_GRAPHS for i, cfg in enumerate(SOWN)]


def test_shalf_refuses_columns_not_in_runs_of_8():
    cfg = next(c for c in SOWN if c.get("shalf"))
    SOWN_GRAPHS["ragged_n"] = lambda: _gemm(M=300, N=522, K=200)
    try:
        with pytest.raises(cg.UnsupportedKernel, match="shalf"):
            _sown_program("ragged_n", cfg, "h100")
    finally:
        del SOWN_GRAPHS["ragged_n"]


def test_shalf_takes_runs_across_image_rows_for_a_plain_cast():
    """28 x 28 NCHW images: a run of 8 outputs crosses rows of the image, contiguous in memory (merged_runs)."""
    conv = em.conv2d(em.input("x", (32, 512, 28, 28), "bfloat16"), em.input("w", (128, 512, 1, 1), "bfloat16"))
    assert [c for c in _defaults(conv) if c["mode"] == "wgmma"][0].get("shalf")
    src = _sown_program("conv1x1_nchw_12x12", SOWN[4], "h100")[1].source
    assert "unsigned short* const sh_" in src


def test_shalf_default_follows_the_epilogue(monkeypatch):
    """EMBER_WGMMA_SHALF: the default ("cast") stages a plain cast only; "columns" a per-column epilogue too (bias,
    relu), not a residual's rows; "all" those too; "0" none; few tiles none; a bad value one clear error."""
    def shalf(y):
        return [c for c in _defaults(y) if c["mode"] == "wgmma"][0].get("shalf", False)
    res = lambda: _gemm(bias=True) + em.input("r", (4100, 2000), "bfloat16")
    bias = lambda: em.relu(_gemm(K=768, bias=True))
    assert shalf(_gemm(K=768)) and not shalf(bias()) and not shalf(res())
    assert not shalf(_gemm(M=256, N=256))
    monkeypatch.setenv("EMBER_WGMMA_SHALF", "columns")
    assert shalf(bias()) and not shalf(res())
    monkeypatch.setenv("EMBER_WGMMA_SHALF", "all")
    assert shalf(res())
    monkeypatch.setenv("EMBER_WGMMA_SHALF", "0")
    assert not shalf(_gemm())
    monkeypatch.setenv("EMBER_WGMMA_SHALF", "yes")
    with pytest.raises(ValueError, match="EMBER_WGMMA_SHALF"):
        _defaults(_gemm())
    monkeypatch.setenv("EMBER_WGMMA_SHALF", "cast")
    monkeypatch.setenv("EMBER_WGMMA_SHALF_MAX_SLICES", "lots")
    with pytest.raises(ValueError, match="EMBER_WGMMA_SHALF_MAX_SLICES"):
        _defaults(_gemm())


def _sown_program(name, cfg, device):
    y = SOWN_GRAPHS[name]()
    t = pipeline.get_target(device)
    lowered = pipeline.lower([y.node], None, t)
    cfgs = [cfg if cg.contraction_of(cg.canonical(k)) is not None else cg.default_config(k, t) for k, _ in lowered.kernels]
    return y, pipeline.build_program(lowered, device, None, "single", configs=cfgs, load=device == "cuda")


def test_the_search_offers_sown_and_it_refuses_ping_pong():
    from ember.search.space import cuda_space
    (k, _), = pipeline.lower([_gemm().node], None, H100).kernels
    assert any(c.get("sown") and c.get("persistent") for c in cuda_space(k, "fast", H100))
    with pytest.raises(cg.UnsupportedKernel):
        cg.render_kernel(k, {"mode": "wgmma", "BM": 64, "BN": 64, "stages": 4, "pingpong": True, "sown": True}, H100)


def test_sown_renders_and_compiles():
    pytest.importorskip("cuda.core")
    from tests.nvrtc_batch import compile_programs
    progs = []
    for name, i in _sown_cases():
        cfg = SOWN[i]
        _, prog = _sown_program(name, cfg, "h100")
        ring = cfg["stages"] * (cfg["BM"] + cfg["BN"]) * 128  # (the buffer starts past the ring)
        assert f"+ {ring}) + cw_" in prog.source, (name, i)
        assert ("unsigned short* const sh_" in prog.source) == bool(cfg.get("shalf")), (name, i)
        progs.append((prog.source, (name, i)))
    failures = compile_programs(progs)
    assert not failures, "\n".join(failures[:3])


@pytest.mark.cuda
@pytest.mark.parametrize("name,i", _sown_cases())
def test_cuda_sown_equals_the_reference(name, i):
    y, prog = _sown_program(name, SOWN[i], "cuda")
    prog.executor.poison = True
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        if name == "conv1x1_nchw_f16":
            ins = {"x": rng.standard_normal((3, 72, 8, 24)).astype(np.float16),
                   "w": (rng.standard_normal((136, 72, 1, 1)) / 8).astype(np.float16)}
        elif name == "conv1x1_nchw_12x12":
            ins = {"x": rng.standard_normal((3, 72, 12, 12)).astype(em.dtypes.bfloat16.np),
                   "w": (rng.standard_normal((136, 72, 1, 1)) / 8).astype(em.dtypes.bfloat16.np)}
        else:
            ins = {"x": rng.standard_normal((1100, 200)).astype(em.dtypes.bfloat16.np),
                   "w": (rng.standard_normal((520, 200)) / 8).astype(em.dtypes.bfloat16.np)}
            if name.startswith("gemm_bias"):
                ins["b"] = rng.standard_normal(520).astype(em.dtypes.bfloat16.np)
            if name == "gemm_bias_residual_gelu":
                ins["r"] = rng.standard_normal((1100, 520)).astype(em.dtypes.bfloat16.np)
        ref = np.asarray(em.reference([y], **ins)[0]).astype(np.float32)
        out = np.asarray(prog(**ins)).astype(np.float32)
        np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(ref).max())))


def _symbolic_gemm():
    return em.input("x", ("n", 256), "bfloat16") @ em.input("w", (8192, 256), "bfloat16").T


def test_a_symbolic_row_count_takes_shalf_planned_for_a_prompt():
    """A prompt's rows (planned as SYMBOLIC_M_GUESS) against 8192 columns: 128 tiles of 128 x 256, so shalf, persistent
    (the grid capped at the SMs and evaluated at launch)."""
    (cfg,) = _defaults(_symbolic_gemm())
    assert cfg.get("shalf") and cfg.get("persistent"), cfg


@pytest.mark.cuda
def test_cuda_shalf_default_over_a_symbolic_row_count():
    y = _symbolic_gemm()
    prog = em.compile(y, device="cuda")
    assert any(l.config["cfg"].get("shalf") for l in prog.launches if "cfg" in l.config)
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((8192, 256)) / 8).astype(em.dtypes.bfloat16.np)
    for n in (1, 77, 512, 1300):
        x = rng.standard_normal((n, 256)).astype(em.dtypes.bfloat16.np)
        ref = np.asarray(em.reference([y], x=x, w=w)[0]).astype(np.float32)
        out = np.asarray(prog(x=x, w=w)).astype(np.float32)
        np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(ref).max())), err_msg=str(n))
