"""TF32 over an MN-major operand through the staging ring (EMBER_WGMMA_TF32_STAGE=1, untimed, off):
TF32 `wgmma` reads K-major operands only, so `x @ W` with W stored [K, N] and a 1x1 conv over the
caller's NCHW tensor had that operand copied K-major first (kernel/layout_gemm.py: two more passes
over it). With the flag both operands are copied raw by TMA into the staging ring
(codegen/cuda_wgmma_staged.py) and the producer writes them into the slots K-major, rounded to TF32,
transposing the MN-major one; a conv's rows (n outside, h w inside) are two runs of the tensor map.
Planned, rendered and compiled for sm_90a here; against float64 on the GPU (marked cuda)."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen.cuda_tma import TmaOperand
from ember.kernel import layout_gemm


@pytest.fixture
def staged(monkeypatch):
    monkeypatch.setattr(layout_gemm, "TF32_STAGE", True)


def _matmul(M, K, N):
    with em.allow_tf32():
        return em.input("a", (M, K)) @ em.input("b", (K, N))


def _pointwise(n, c, h, w, o, seed=0):
    rng = np.random.default_rng(seed)
    with em.allow_tf32():
        wt = em.tensor((rng.standard_normal((o, c, 1, 1)) / c ** 0.5).astype(np.float32))
        return em.conv2d(em.input("x", (n, c, h, w)), wt)


def _contractions(y):
    lowered = pipeline.lower([y.node], None, pipeline.get_target("h100"))
    return lowered, [k for k, _ in lowered.kernels if cg.contraction_of(cg.canonical(k)) is not None]


def _mn_major(plan):
    return [p for p in plan[1:] if isinstance(p, TmaOperand) and not p.kmajor]


def test_off_by_default_the_mn_major_operand_is_copied_or_gathered():
    assert not layout_gemm.TF32_STAGE
    for y in (_matmul(300, 512, 1000), _pointwise(4, 256, 32, 36, 128)):
        _, ks = _contractions(y)
        plan = cg.wgmma_applicable(cg.canonical(ks[-1]))
        assert isinstance(plan, str) or not _mn_major(plan), plan


@pytest.mark.parametrize("case", ["matmul", "pointwise"])
def test_staged_plans_both_operands_as_copies(staged, case):
    y = _matmul(300, 512, 1000) if case == "matmul" else _pointwise(4, 256, 32, 36, 128)
    lowered, ks = _contractions(y)
    assert not [k for k, _ in lowered.kernels if k.name.endswith("_cast")]  # no K-major copy kernel
    plan = cg.wgmma_applicable(cg.canonical(ks[0]))
    assert plan[0] == "tf32" and all(isinstance(p, TmaOperand) for p in plan[1:]), plan
    mn, = _mn_major(plan)
    if case == "pointwise":  # rows n x (h w): two runs, the inner one 32 x 36 pixels
        assert mn.r_inner == 32 * 36
    cfg = cg.default_config(ks[0], pipeline.get_target("h100"))
    assert cfg["mode"] == "wgmma"
    src = cg.render_kernel(ks[0], cfg)[0]
    body = src.split("__global__")[-1]  # (after the helpers: the kernel itself)
    assert "em_tf32_store(" in body and "em_tf32_copy(" in body and "em_split3" not in body


def test_staged_refuses_ping_pong_and_slot_staging(staged):
    _, ks = _contractions(_matmul(300, 512, 1000))
    for cfg in ({"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "pingpong": True},
                {"mode": "wgmma", "BM": 128, "BN": 64, "stages": 2, "staged": False}):
        with pytest.raises(cg.UnsupportedKernel):
            cg.render_kernel(ks[0], cfg)


CONFIGS = [None, {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 3},
           {"mode": "wgmma", "BM": 64, "BN": 256, "stages": 2, "persistent": True},
           {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 2, "occupancy": 2}]


def _build(y, cfg, device):
    lowered, ks = _contractions(y)
    t = pipeline.get_target(device)
    cfgs = [cfg if (cfg is not None and k is ks[0]) else cg.default_config(k, t) for k, _ in lowered.kernels]
    return pipeline.build_program(lowered, device, None, "single", configs=cfgs, load=device == "cuda")


def test_staged_compiles_for_sm90a(staged):
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    for y in (_matmul(300, 512, 1000), _pointwise(4, 256, 32, 36, 128)):
        for cfg in CONFIGS:
            prog = _build(y, cfg, "h100")
            assert all(len(c) > 0 for c in compile_kernels(prog.source, "sm_90a").values()), cfg


@pytest.mark.cuda
@pytest.mark.parametrize("cfg", CONFIGS, ids=["default", "128x128", "64x256p", "64x128o2"])
def test_staged_matches_float64_on_the_gpu(staged, cfg):
    """Ragged rows (300 x 512 x 1000, split over k; 4 x 256 x 32 x 36 -> 128), poisoned outputs, two seeds."""
    from ember.precision import TF32_TOL
    for name, y, shapes in (("matmul", _matmul(300, 512, 1000), {"a": (300, 512), "b": (512, 1000)}),
                            ("pointwise", _pointwise(4, 256, 32, 36, 128), {"x": (4, 256, 32, 36)})):
        prog = _build(y, cfg, "cuda")
        prog.executor.poison = True
        for seed in (0, 1):
            rng = np.random.default_rng(seed)
            feed = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
            out = np.asarray(prog(**feed), np.float64)
            ref = np.asarray(em.reference([y], **{k: v.astype(np.float64) for k, v in feed.items()})[0], np.float64)
            err = np.abs(out - ref).max() / np.abs(ref).max()
            assert err < TF32_TOL, f"{name} {cfg} seed {seed}: {err}"
