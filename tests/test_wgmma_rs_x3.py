"""wgmma's RS form at float32 accuracy (tf32x3, codegen/cuda_wgmma_rs.py): A's tile left raw in shared memory
(gathered, or copied K- or MN-major by TMA), each consumer thread splitting its own fragment into TF32 hi and
lo registers; B's hi and lo tiles as in the shared-memory form. Planned, rendered and compiled for sm_90a
here (and the register split that keeps ptxas from serialising the wgmmas is emitted); against float64 on
the GPU (marked cuda) at float32's accuracy, where one TF32 product (~1e-3) would fail: a stride-4 11x11
conv with its pixels gathered on the rows (the seed-000 conv's form, ragged rows and k), x @ W.T, x @ W."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from tests.test_wgmma_rs import _build, _contraction  # (the one contraction of a graph, built under a config)

F32_TOL = 1e-5  # relative to the largest output; one TF32 pass is ~1e-3 off

CONV = [{"mode": "wgmma", "BM": 128, "BN": 96, "stages": 3, "swap": True, "rs": True},
        {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "swap": True, "rs": True},
        {"mode": "wgmma", "BM": 128, "BN": 64, "stages": 3, "swap": True, "rs": True, "persistent": True, "overlap": False},
        # the raw A as cp.async copies, rows split once a tile or per chunk (the split of B waits for them)
        {"mode": "wgmma", "BM": 128, "BN": 96, "stages": 5, "swap": True, "rs": True, "cpasync": True},
        {"mode": "wgmma", "BM": 128, "BN": 96, "stages": 4, "swap": True, "rs": True, "cpasync": True, "hoist": False, "persistent": True}]
LINEAR = [{"mode": "wgmma", "BM": 128, "BN": 96, "stages": 3, "rs": True},
          {"mode": "wgmma", "BM": 64, "BN": 64, "stages": 4, "rs": True, "persistent": True}]


def _conv():
    """The seed-000 conv's form, small: 3 channels, 11 x 11 taps, stride 4, 96 output channels, weights an input."""
    x, w = em.input("x", (3, 3, 64, 72), "float32"), em.input("w", (96, 3, 11, 11), "float32")
    return em.conv2d(x, w, stride=4, padding=2), {"x": (3, 3, 64, 72), "w": (96, 3, 11, 11)}


def _linear():
    """x @ W.T + b: both operands K-major (A copied by TMA as stored)."""
    a, W, b = em.input("a", (200, 136), "float32"), em.input("W", (264, 136), "float32"), em.input("b", (264,), "float32")
    return a @ W.T + b, {"a": (200, 136), "W": (264, 136), "b": (264,)}


def _x_at_w():
    """x @ W with W [K, N]: swapped, W's MN-major tile is A."""
    a, W = em.input("a", (200, 136), "float32"), em.input("W", (136, 264), "float32")
    return a @ W, {"a": (200, 136), "W": (136, 264)}


CASES = [(_conv, CONV), (_linear, LINEAR), (_x_at_w, [dict(c, swap=True) for c in LINEAR])]


def test_the_plans_put_a_raw_operand_on_a():
    from ember.codegen.cuda_wgmma_rs import rs_applies
    t = pipeline.get_target("h100")
    for make, cfgs in CASES:
        y, _ = make()
        c = cg.canonical(_contraction(pipeline.lower([y.node], None, t)))
        plan = cg.wgmma_applicable(c, swap=bool(cfgs[0].get("swap")), rs=True)
        assert not isinstance(plan, str) and plan[0] == "tf32x3", (make.__name__, plan)
        assert rs_applies(plan, cfgs[0]) and not rs_applies(plan, dict(cfgs[0], rs=False)), make.__name__


@pytest.mark.parametrize("case", range(len(CASES)), ids=[m.__name__ for m, _ in CASES])
def test_rs_x3_renders_the_split_in_registers_and_compiles(case):
    pytest.importorskip("cuda.core")
    from ember.backends.cuda_compile import ptxas_report, wgmma_serialized
    make, cfgs = CASES[case]
    y, _ = make()
    for cfg in cfgs:
        k, prog = _build(y, cfg, "h100")
        src = prog.source
        assert "em_lds_split3" in src and "em_wgmma_rs_tf32_n" in src, cfg
        body = src[src.index(f" {k.name}("):]
        # A stays raw: the producer splits B only, never writes an A lo tile; the consumers get the registers
        assert "setmaxnreg.inc" in body, cfg
        assert ("cp.async.wait_group" in body) == bool(cfg.get("cpasync")), cfg
        # compiled for sm_90a, and ptxas overlaps the wgmmas (it serialised them without the register split)
        assert wgmma_serialized(ptxas_report(src)) == [], cfg


def test_tiles_whose_registers_do_not_fit_are_refused():
    from ember.kernel.structure import UnsupportedKernel
    y, _ = _conv()
    with pytest.raises(UnsupportedKernel, match="RS form"):
        _build(y, dict(CONV[0], BN=256), "h100")


def _check(y, cfg, inputs, seeds=(0, 1)):
    _, prog = _build(y, cfg, "cuda")
    prog.executor.poison = True
    for seed in seeds:
        rng = np.random.default_rng(seed)
        feed = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in inputs.items()}
        out = np.asarray(prog(**feed), np.float64)
        ref = np.asarray(em.reference([y], **{k: v.astype(np.float64) for k, v in feed.items()})[0], np.float64)
        err = np.abs(out - ref).max() / np.abs(ref).max()
        assert err < F32_TOL, f"{cfg} seed {seed}: {err}"


@pytest.mark.cuda
@pytest.mark.parametrize("case,i", [(c, i) for c, (_, cfgs) in enumerate(CASES) for i in range(len(cfgs))])
def test_rs_x3_matches_float64_on_the_gpu(case, i):
    make, cfgs = CASES[case]
    y, inputs = make()
    _check(y, cfgs[i], inputs)


def test_the_search_offers_rs_x3_tiles_that_fit():
    from ember.codegen.cuda_wgmma_rs import RS_MAX_REGISTERS, rs_registers
    from ember.codegen.cuda_wgmma_space import wgmma_configs
    t = pipeline.get_target("h100")
    y, _ = _conv()
    space = wgmma_configs(cg.canonical(_contraction(pipeline.lower([y.node], None, t))), "full", t)
    rs = [cf for cf in space if cf.get("rs")]
    assert any(cf.get("swap") and cf["BN"] == 96 for cf in rs), rs
    assert all(rs_registers(cf["BN"], cf.get("overlap", True), 0, True) <= RS_MAX_REGISTERS for cf in rs), rs


@pytest.mark.parametrize("flag", ["1", "0"])
def test_the_default_takes_rs_x3_for_a_float32_conv_by_flag(monkeypatch, flag):
    monkeypatch.setenv("EMBER_WGMMA_RS_X3", flag)
    t = pipeline.get_target("h100")
    y, _ = _conv()
    cfg = cg.default_config(_contraction(pipeline.lower([y.node], None, t)), t)
    assert cfg["mode"] == "wgmma", cfg
    if flag == "1":  # the pixels on A (swapped), 96 columns for the 96 channels, A's chunks copied, the split close behind
        assert cfg.get("rs") and cfg.get("swap") and cfg.get("cpasync") and cfg["BN"] == 96 and cfg["lag"] == 1, cfg
    else:
        assert not cfg.get("rs"), cfg
    # TF32 allowed: one product, no split, the default as before
    x, w = em.input("x", (3, 3, 64, 72), "float32"), em.input("w", (96, 3, 11, 11), "float32")
    with em.allow_tf32():
        y32 = em.conv2d(x, w, stride=4, padding=2)
    assert not cg.default_config(_contraction(pipeline.lower([y32.node], None, t)), t).get("rs")


def _conv3x3():
    """A float32 3x3 conv over 64 channels (whole 128-byte k slices: the copy engine's im2col walk would take the
    input in the shared-memory form; the RS form keeps it gathered)."""
    x, w = em.input("x", (2, 64, 20, 18), "float32"), em.input("w", (64, 64, 3, 3), "float32")
    return em.conv2d(x, w, padding=1), {"x": (2, 64, 20, 18), "w": (64, 64, 3, 3)}


def test_a_3x3_conv_keeps_its_input_gathered_under_rs():
    """Its default stays the shared-memory form over the im2col walk (RS over it is untimed); under the knob the
    input stays gathered (cp.async copies), the walk not taken."""
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    t = pipeline.get_target("h100")
    y, _ = _conv3x3()
    k = _contraction(pipeline.lower([y.node], None, t))
    assert not cg.default_config(k, t).get("rs")
    cfg = RS3X3
    _, prog = _build(y, cfg, "h100")
    body = prog.source.split(f" {k.name}(")[1].split("__global__")[0]
    assert "em_cp_async16(" in body and "em_lds_split3(" in body and "im2col" not in body
    assert all(len(c) > 0 for c in compile_kernels(prog.source, "sm_90a").values())


RS3X3 = {"mode": "wgmma", "BM": 128, "BN": 64, "stages": 5, "rs": True, "cpasync": True, "lag": 1, "persistent": True}


@pytest.mark.cuda
@pytest.mark.parametrize("make,cfg", [(_conv, None), (_conv3x3, RS3X3)], ids=["default", "3x3"])
def test_the_rs_x3_default_matches_float64_on_the_gpu(make, cfg):
    y, inputs = make()
    _check(y, cfg, inputs)
