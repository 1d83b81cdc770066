"""wgmma's RS form (codegen/cuda_wgmma_rs.py, knob `rs`): TF32 products over an MN-major operand — an NCHW
1x1 conv's input, the W of `x @ W` — with that operand on A, TMA staging its tile as stored and each
consumer thread loading its fragment into registers, instead of a K-major copy first. Planned, rendered
and compiled for sm_90a here; the default's choice under EMBER_WGMMA_RS=1 (kernel/layout_gemm.py leaves
the operand uncopied, codegen/cuda_schedule.py rs_default); against the reference on the GPU (marked
cuda): ragged row tiles, k not a multiple of the slice, two seeds."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.kernel import layout_gemm

RS = [{"mode": "wgmma", "BM": 128, "BN": 64, "stages": 4, "swap": True, "rs": True},
      {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "swap": True, "rs": True, "overlap": False},
      {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "swap": True, "rs": True},
      {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "swap": True, "rs": True, "persistent": True}]


def _pointwise(n=3, c=40, o=72, h=16, w=20, seed=0):
    """An NCHW 1x1 conv in TF32: out[n, o, p] = sum_c W[o, c] x[n, c, p], the pixels innermost."""
    rng = np.random.default_rng(seed)
    x = em.input("x", (n, c, h, w), "float32")
    wt = em.tensor((rng.standard_normal((o, c, 1, 1)) / 8).astype(np.float32))
    with em.allow_tf32():
        return em.conv2d(x, wt)


def _x_at_w():
    """x @ W in TF32 with W stored [K, N] (N innermost), a bias added in the epilogue."""
    a = em.input("a", (200, 136), "float32")
    W = em.input("W", (136, 264), "float32")
    b = em.input("b", (264,), "float32")
    with em.allow_tf32():
        return a @ W + b


def _contraction(lowered):
    ks = [k for k, _ in lowered.kernels if cg.contraction_of(cg.canonical(k)) is not None]
    assert len(ks) == 1
    return ks[0]


def _build(y, cfg, device):
    t = pipeline.get_target(device)
    lowered = pipeline.lower([y.node], None, t)
    k = _contraction(lowered)
    cfgs = [cfg if kk is k and cfg is not None else cg.default_config(kk, t) for kk, _ in lowered.kernels]
    return k, pipeline.build_program(lowered, device, None, "single", configs=cfgs, load=device == "cuda")


def test_rs_takes_the_mn_major_operand_on_a():
    lowered = pipeline.lower([_pointwise().node], None, pipeline.get_target("h100"))
    c = cg.canonical(_contraction(lowered))
    plan = cg.wgmma_applicable(c, gather=False, swap=True, rs=True)
    assert not isinstance(plan, str) and plan[0] == "tf32" and not plan[1].kmajor and plan[2].kmajor
    # without the knob TF32 cannot read it (no transpose): the copy engine does not take it
    assert isinstance(cg.wgmma_applicable(c, gather=False, swap=True), str)
    # unswapped, the MN-major input is B: the RS form loads A only
    assert isinstance(cg.wgmma_applicable(c, gather=False, rs=True), str)


@pytest.mark.parametrize("flag", [False, True])
def test_the_default_leaves_the_operand_uncopied_by_flag(monkeypatch, flag):
    monkeypatch.setattr(layout_gemm, "RS", flag)
    y = _pointwise(n=2, c=256, o=256, h=16, w=24)  # (enough products per byte for the copy to pay)
    t = pipeline.get_target("h100")
    lowered = pipeline.lower([y.node], None, t)
    k = _contraction(lowered)
    cfg = cg.default_config(k, t)
    if flag:
        assert len(lowered.kernels) == 1 and cfg["mode"] == "wgmma" and cfg.get("rs") and cfg.get("swap"), cfg
    else:
        assert len(lowered.kernels) == 2 and not cfg.get("rs"), cfg  # (a K-major copy first)


def test_x_at_w_takes_rs_swapped_by_flag(monkeypatch):
    monkeypatch.setattr(layout_gemm, "RS", True)
    t = pipeline.get_target("h100")
    lowered = pipeline.lower([_x_at_w().node], None, t)
    cfg = cg.default_config(_contraction(lowered), t)
    assert cfg["mode"] == "wgmma" and cfg.get("rs") and cfg.get("swap"), cfg


def test_rs_needs_an_mn_major_a():
    """The knob on a plan without an MN-major TF32 operand renders the ordinary shared-memory form."""
    lowered = pipeline.lower([_pointwise().node], None, pipeline.get_target("h100"))
    k = _contraction(lowered)
    src = cg.render_kernel(k, dict(RS[0], swap=False), target=pipeline.get_target("h100"))
    assert "em_wgmma_rs_" not in str(src)


@pytest.mark.parametrize("cfg", RS, ids=["128x64", "64x128-serial", "64x128", "128x256p"])
def test_rs_compiles_for_sm90a(monkeypatch, cfg):
    pytest.importorskip("cuda.core")
    monkeypatch.setattr(layout_gemm, "RS", True)  # (no K-major copy of the operand whatever its size)
    from ember.backends.cuda_compile import ptxas_report, wgmma_serialized
    for y in (_pointwise(), _x_at_w()):
        k, prog = _build(y, cfg, "h100")
        assert "em_wgmma_rs_tf32_n" in prog.source and "em_lds_tf32" in prog.source
        # compiled for sm_90a; not serialised (the 64-row tile was, before the RS form split the register file)
        assert wgmma_serialized(ptxas_report(prog.source)) == [], cfg


def _check(y, cfg, inputs, seeds=(0, 1)):
    from ember.precision import TF32_TOL
    _, prog = _build(y, cfg, "cuda")
    prog.executor.poison = True
    for seed in seeds:
        rng = np.random.default_rng(seed)
        feed = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in inputs.items()}
        out = np.asarray(prog(**feed), np.float64)
        ref = np.asarray(em.reference([y], **feed)[0], np.float64)
        err = np.abs(out - ref).max() / np.abs(ref).max()
        assert err < TF32_TOL, f"{cfg} seed {seed}: {err}"


@pytest.mark.cuda
@pytest.mark.parametrize("cfg", RS, ids=["128x64", "64x128-serial", "64x128", "128x256p"])
def test_rs_pointwise_conv_matches_the_reference_on_the_gpu(monkeypatch, cfg):
    monkeypatch.setattr(layout_gemm, "RS", True)
    _check(_pointwise(), cfg, {"x": (3, 40, 16, 20)})


@pytest.mark.cuda
@pytest.mark.parametrize("cfg", RS, ids=["128x64", "64x128-serial", "64x128", "128x256p"])
def test_rs_x_at_w_matches_the_reference_on_the_gpu(monkeypatch, cfg):
    monkeypatch.setattr(layout_gemm, "RS", True)
    _check(_x_at_w(), cfg, {"a": (200, 136), "W": (136, 264), "b": (264,)})


@pytest.mark.cuda
def test_rs_default_matches_the_reference_on_the_gpu(monkeypatch):
    monkeypatch.setattr(layout_gemm, "RS", True)
    y = _pointwise(n=2, c=256, o=256, h=16, w=24)
    t = pipeline.get_target("cuda")
    lowered = pipeline.lower([y.node], None, t)
    assert cg.default_config(_contraction(lowered), t).get("rs")
    _check(y, None, {"x": (2, 256, 16, 24)})


def test_the_search_offers_rs():
    from ember.codegen.cuda_wgmma_space import wgmma_configs
    t = pipeline.get_target("h100")
    lowered = pipeline.lower([_pointwise().node], None, t)
    space = wgmma_configs(cg.canonical(_contraction(lowered)), "full", t)
    assert any(cf.get("rs") and cf.get("swap") and cf["BN"] == 256 for cf in space), space


def test_a_conv_with_32_output_channels_is_left_as_before(monkeypatch):
    """32 output channels: the RS tile's 64 rows a side do not fit (layout_gemm.RS_MIN), so the flag changes
    nothing there: the same kernels and the narrow 32-wide tile (codegen/cuda_schedule.py narrow_default)."""
    t = pipeline.get_target("h100")
    plans = []
    for flag in (False, True):
        monkeypatch.setattr(layout_gemm, "RS", flag)
        lowered = pipeline.lower([_pointwise(n=2, c=256, o=32, h=32, w=64).node], None, t)
        plans.append([(k.name, cg.default_config(k, t)) for k, _ in lowered.kernels])
    assert plans[0] == plans[1] and not any(cfg.get("rs") for _, cfg in plans[1]), plans
