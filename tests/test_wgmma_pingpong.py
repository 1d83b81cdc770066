"""The wgmma kernel's knob `pingpong` (codegen/cuda_wgmma.py): two consumer warpgroups on alternate
64-row tiles of a persistent loop, one's epilogue under the other's products, ordered by named
barriers. Rendered and compiled for sm_90a here (and offered by the search); against the reference on
the GPU (marked cuda): odd shapes, an odd and an even number of tiles per block, one k slice and many."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen.cuda_wgmma_space import wgmma_configs

BF = em.dtypes.bfloat16


def _linear(M, N, K, residual=False):
    rng = np.random.default_rng(0)
    x = em.input("x", (M, K), "bfloat16")
    w = em.input("w", (N, K), "bfloat16")
    b = em.tensor(rng.standard_normal(N).astype(np.float32))
    y = (x @ w.T).cast("float32") + b
    if residual:
        y = y + em.input("r", (M, N), "bfloat16").cast("float32")
    return y.gelu().cast("bfloat16")


def _wgmma_kernels(lowered):
    return [k for k, _ in lowered.kernels if not isinstance(cg.wgmma_applicable(cg.canonical(k)), str)]


def _build(y, cfg, device):
    lowered = pipeline.lower([y.node], None, pipeline.get_target(device))
    ks = _wgmma_kernels(lowered)
    assert len(ks) == 1
    cfgs = [cfg if k is ks[0] else cg.default_config(k, pipeline.get_target(device)) for k, _ in lowered.kernels]
    return ks[0], pipeline.build_program(lowered, device, None, "single", configs=cfgs, load=device == "cuda")


PP = [{"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "pingpong": True},
      {"mode": "wgmma", "BM": 64, "BN": 256, "stages": 3, "pingpong": True, "group": 8}]


def test_pingpong_renders_two_consumers_on_alternate_tiles_and_compiles():
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    for cfg in PP:
        k, prog = _build(_linear(333, 520, 200, residual=True), cfg, "h100")
        src, meta = cg.render_kernel(k, cfg, target=pipeline.get_target("h100"))
        assert meta["block"] == 384 and "tile_ += 2 * gridDim.x" in src and "kit_ += KT_;" in src
        assert 'bar.sync %0, 256;' in src and 'bar.arrive %0, 256;' in src
        assert all(len(b) > 0 for b in compile_kernels(prog.source, "sm_90a").values())


def test_pingpong_refuses_what_it_cannot_do():
    y = _linear(333, 520, 200)
    k, _ = _build(y, PP[0], "h100")
    for bad in (dict(PP[0], BM=128), dict(PP[0], occupancy=2)):
        with pytest.raises(cg.UnsupportedKernel):
            cg.render_kernel(k, bad, target=pipeline.get_target("h100"))


def test_the_search_offers_pingpong():
    k, _ = _build(_linear(4096, 3072, 768), PP[0], "h100")
    assert any(c.get("pingpong") for c in wgmma_configs(cg.canonical(k), "fast", pipeline.get_target("h100")))


@pytest.mark.cuda
@pytest.mark.parametrize("cfg", PP, ids=["64x128", "64x256"])
@pytest.mark.parametrize("M,N,K", [(333, 520, 200), (4096, 768, 64), (1000, 256, 1536), (8192, 384, 768)])
def test_pingpong_matches_the_reference_on_the_gpu(cfg, M, N, K):
    y = _linear(M, N, K, residual=K == 64)
    _, prog = _build(y, cfg, "cuda")
    prog.executor.poison = True
    for seed in (0, 1):
        g = np.random.default_rng(seed)
        feed = {"x": g.standard_normal((M, K)).astype(BF.np), "w": (g.standard_normal((N, K)) / 8).astype(BF.np)}
        if K == 64:
            feed["r"] = g.standard_normal((M, N)).astype(BF.np)
        out = np.asarray(prog(**feed), np.float32)
        ref = np.asarray(em.reference(y, **feed), np.float32)
        err = np.abs(out - ref).max() / np.abs(ref).max()
        assert err < 2e-2, (cfg, M, N, K, seed, err)
