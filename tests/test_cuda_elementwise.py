"""The elementwise mode's `unroll` knob (codegen/cuda_elementwise.py): U vectors a thread per step, a
whole step straight-line (its loads issued together), the last step guarded; ragged and aligned sizes,
vectors and scalars, broadcasts. Rendered and compiled for sm_90a in CI; run against the reference on
the GPU."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg

_GRAPHS = {
    "relu_aligned": ({"x": (64, 1024)}, lambda x: x.relu()),
    "silu_ragged": ({"x": (37, 1001)}, lambda x: x * x.sigmoid()),
    "bias_broadcast": ({"x": (33, 96), "b": (96,)}, lambda x, b: (x + b).tanh()),
    "odd_scalar": ({"x": (7, 13, 3)}, lambda x: x.exp() * 2.0),
}


def _build(name, cfg, device):
    shapes, fn = _GRAPHS[name]
    y = fn(*[em.input(n, s) for n, s in shapes.items()])
    lowered = pipeline.lower([y.node], None, pipeline.get_target(device))
    cfgs = [dict(cfg) if cg.default_config(k)["mode"] == "elementwise" else cg.default_config(k) for k, _ in lowered.kernels]
    return y, shapes, pipeline.build_program(lowered, device, None, "single", configs=cfgs)


@pytest.mark.parametrize("unroll", [2, 4])
@pytest.mark.parametrize("name", sorted(_GRAPHS))
def test_unrolled_elementwise_renders_and_compiles(name, unroll):
    _, _, prog = _build(name, {"mode": "elementwise", "threads": 256, "vec": 8, "unroll": unroll}, "h100")
    assert "for (int u_ = 0; u_ < " in prog.source and "if (c_ >= n_) break;" in prog.source
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    assert all(len(c) > 0 for c in compile_kernels(prog.source, "sm_90a").values())


def test_search_space_offers_unrolled_elementwise():
    from ember.search.space import cuda_space
    shapes, fn = _GRAPHS["relu_aligned"]
    y = fn(*[em.input(n, s) for n, s in shapes.items()])
    k = pipeline.lower([y.node], None, pipeline.get_target("h100")).kernels[0][0]
    assert any(c.get("unroll", 1) > 1 for c in cuda_space(k, "full", pipeline.get_target("h100")))


@pytest.mark.cuda
@pytest.mark.parametrize("unroll", [2, 4])
@pytest.mark.parametrize("name", sorted(_GRAPHS))
def test_unrolled_elementwise_on_the_gpu(name, unroll):
    for threads, vec in ((256, 8), (128, 1)):
        y, shapes, prog = _build(name, {"mode": "elementwise", "threads": threads, "vec": vec, "unroll": unroll}, "cuda")
        prog.executor.poison = True
        for seed in (0, 1):
            rng = np.random.default_rng(seed)
            ins = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
            out = np.asarray(prog(**ins), np.float64)
            ref = np.asarray(em.reference([y], **ins)[0], np.float64)
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5, err_msg=f"{name} {threads} {vec} seed {seed}")
