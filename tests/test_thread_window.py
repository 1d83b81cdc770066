"""Thread-mode window defaults (codegen/cuda_thread_window.py): short unstripped windows cap their grid (knob
`gridcap`: each thread loops over several outputs), windows of 17-32 taps are unrolled on every branch that
picks thread mode, and strips run over extents their width does not divide. Checked on the default schedule
and the rendered launch (CPU) and against the reference on the GPU, odd sizes."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen import cuda_thread_window
from ember.ops.conv import _pool

H100 = pipeline.get_target("h100")


def _kernel(y, target=H100):
    (k,) = [kk for kk, _ in pipeline.lower([y.node], None, target).kernels if cg.canonical(kk).stages]
    return k


def _dilated_1d(L):  # real KernelBench 41's window: 8 taps, dilation 3 (three outputs share under a quarter)
    return em.max_pool1d(em.input("x", (3, 5, L)), 8, stride=1, padding=4, dilation=3)


def _dilated_3d():  # real KernelBench 43's: 27 taps, stride 2, dilation 3 (neighbours share nothing); 81 x 82 x 80
    # outputs: enough rows for thread mode (fewer take more lanes a row: cols mode)
    return _pool(em.input("x", (1, 1, 165, 167, 163)), 3, 2, 1, 3, False, 3, "max")


def test_a_short_unstripped_window_caps_its_grid(monkeypatch):
    k = _kernel(_dilated_1d(20011))
    cfg = cg.default_config(k, H100)
    assert cfg["mode"] == "thread" and "strip" not in cfg and cfg["gridcap"] == cuda_thread_window.THREAD_GRIDCAP
    _, launch = cg.render_kernel(k, dict(cfg, gridcap=1), H100)
    assert launch["grid"] == H100.sm_count  # (uncapped: 2345 blocks of 128 threads)
    monkeypatch.setattr(cuda_thread_window, "THREAD_GRIDCAP", 0)
    assert "gridcap" not in cg.default_config(k, H100)


def test_a_27_tap_window_is_unrolled_where_its_outputs_share_nothing():
    cfg = cg.default_config(_kernel(_dilated_3d()), H100)
    assert cfg["mode"] == "thread" and cfg.get("unroll") == 32 and "gridcap" not in cfg


def test_a_strip_over_an_extent_it_does_not_divide():
    # 65 outputs a row (real KernelBench 44 has 65537): 16 strips of 4 and a last one of 1
    k = _kernel(em.avg_pool1d(em.input("x", (2, 3, 64)), 8, stride=1, padding=4))
    cfg = cg.default_config(k, H100)
    assert cfg.get("strip") == 4
    src, _ = cg.render_kernel(k, cfg, H100)
    assert "the last strip" in src


@pytest.mark.cuda
@pytest.mark.parametrize("case", ["dilated_1d_gridcap1", "dilated_1d", "dilated_3d", "avg_1d_remainder"])
def test_cuda_thread_windows_equal_the_reference(case):
    y, shape = {"dilated_1d_gridcap1": (_dilated_1d(20011), (3, 5, 20011)), "dilated_1d": (_dilated_1d(20011), (3, 5, 20011)),
                "dilated_3d": (_dilated_3d(), (1, 1, 165, 167, 163)),
                "avg_1d_remainder": (em.avg_pool1d(em.input("x", (3, 5, 4097)), 8, stride=1, padding=4), (3, 5, 4097))}[case]
    lowered = pipeline.lower([y.node], None, pipeline.get_target("cuda"))
    cfgs = []
    for k, _ in lowered.kernels:
        cfg = cg.default_config(k, pipeline.get_target("cuda"))
        cfgs.append(dict(cfg, gridcap=1) if case.endswith("gridcap1") and cfg.get("mode") == "thread" else cfg)
    prog = pipeline.build_program(lowered, "cuda", None, "single", configs=cfgs)
    prog.executor.poison = True
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(np.asarray(prog(x=x)), np.asarray(em.reference([y], x=x)[0]), rtol=1e-5, atol=1e-5)
