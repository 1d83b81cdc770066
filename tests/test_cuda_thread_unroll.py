"""A thread's short fixed reduction unrolled (codegen/cuda_rows.py knob `unroll` in the `thread` mode,
offered by search/space.py): a 3x3 pooling window with padding, its 9 guarded loads in one unrolled
loop (KernelBench 42's 3x3x3 window ran rolled). Rendered and compiled for sm_90a in CI; against the reference on the GPU."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg

CFG = {"mode": "thread", "threads": 128, "vec": 8, "cache": False, "unroll": 32}


SHAPE = (2, 3, 19, 21)


def _pool():
    return em.avg_pool2d(em.input("x", SHAPE), 3, stride=2, padding=1)


def _prog(device):
    y = _pool()
    lowered = pipeline.lower([y.node], None, pipeline.get_target(device))
    cfgs = [CFG if cg.canonical(k).stages else cg.default_config(k) for k, _ in lowered.kernels]
    return y, pipeline.build_program(lowered, device, None, "single", configs=cfgs)


def test_thread_unroll_renders_and_compiles():
    from ember.search.space import cuda_space
    y, prog = _prog("h100")
    assert "#pragma unroll" in prog.source and "for (int i_ = 0; i_ < " in prog.source
    k = next(k for k, _ in pipeline.lower([y.node], None, pipeline.get_target("h100")).kernels if cg.canonical(k).stages)
    assert CFG in cuda_space(k, "full", pipeline.get_target("h100"))
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    assert all(len(c) > 0 for c in compile_kernels(prog.source, "sm_90a").values())


@pytest.mark.cuda
def test_thread_unroll_on_the_gpu():
    y, prog = _prog("cuda")
    prog.executor.poison = True
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
        np.testing.assert_allclose(np.asarray(prog(x=x)), np.asarray(em.reference([y], x=x)[0]), rtol=1e-5, atol=1e-6)


def test_the_default_unrolls_windows_of_17_to_32_taps(monkeypatch):
    """A thread-mode window of 17-32 float taps unrolled by default, every window of 2-32 with
    EMBER_THREAD_UNROLL=1; an integer max never (NVRTC 13.0 miscompiles it unrolled)."""
    from ember.codegen import cuda_thread_window
    y = _pool()
    (k, _), = [kk for kk in pipeline.lower([y.node], None, pipeline.get_target("h100")).kernels if cg.canonical(kk[0]).stages]
    assert "unroll" not in cg.default_config(k)  # 9 taps: rolled
    y3 = em.avg_pool2d(em.input("x3", SHAPE), 5, stride=2, padding=2)
    (k3, _), = [kk for kk in pipeline.lower([y3.node], None, pipeline.get_target("h100")).kernels if cg.canonical(kk[0]).stages]
    assert cg.default_config(k3)["unroll"] == 32  # 25 taps
    monkeypatch.setattr(cuda_thread_window, "THREAD_UNROLL_MIN", 2)
    assert cg.default_config(k)["unroll"] == 32
    xi = em.input("xi", SHAPE, "int32")
    (ki, _), = [kk for kk in pipeline.lower([em.max_pool2d(xi, 3, stride=2, padding=1).node], None,
                                            pipeline.get_target("h100")).kernels if cg.canonical(kk[0]).stages]
    assert "unroll" not in cg.default_config(ki)
