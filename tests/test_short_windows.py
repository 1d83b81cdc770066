"""A window read in short runs that neighbouring outputs continue (an 11 x 11 average pool with stride 11)
takes a thread per output, not a warp per output (codegen/cuda_walks.py `short_window_runs`): checked on the
default schedule (CPU) and against the reference on the GPU."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen import cuda_schedule

H100 = pipeline.get_target("h100")


def _kernel(y):
    (k,) = [kk for kk, _ in pipeline.lower([y.node], None, H100).kernels if cg.canonical(kk).stages]
    return k


def test_a_wide_non_overlapping_pool_takes_a_thread_per_output(monkeypatch):
    k = _kernel(em.avg_pool2d(em.input("x", (4, 16, 11 * 40, 11 * 40)), 11, stride=11))
    assert cg.default_config(k, H100)["mode"] == "thread"
    monkeypatch.setattr(cuda_schedule, "SHORT_WINDOW_THREADS", False)
    assert cg.default_config(k, H100)["mode"] == "warp"


def test_long_contiguous_rows_keep_a_warp_per_row():
    k = _kernel(em.sum(em.input("x", (4096, 512)), axis=1))
    assert cg.default_config(k, H100)["mode"] != "thread"
    # a window whose rows are 40 taps long: lanes along the row read it coalesced
    k2 = _kernel(em.avg_pool2d(em.input("x", (4, 16, 4 * 40, 40 * 40)), (4, 40), stride=(4, 40)))
    assert cg.default_config(k2, H100)["mode"] != "thread"


@pytest.mark.cuda
def test_cuda_wide_pool_equals_the_reference():
    y = em.avg_pool2d(em.input("x", (8, 9, 11 * 30 + 5, 11 * 37 + 3)), 11, stride=11)
    prog = em.compile(y, device="cuda")
    assert any(l.config.get("mode") == "thread" for l in prog.launches)
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal((8, 9, 11 * 30 + 5, 11 * 37 + 3)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(prog(x=x)), np.asarray(em.reference([y], x=x)[0]), rtol=1e-5, atol=1e-6)
