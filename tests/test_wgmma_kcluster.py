"""wgmma knob `cluster`: the k loop split over a thread-block cluster, the partial tiles summed through distributed
shared memory (codegen/cuda_wgmma_kcluster.py). Rendered and compiled for sm_90a here (grid, k ranges, refusals, the
default's choice of it); against the reference on the GPU (marked cuda): ragged rows, k not a multiple
of the slice or of the cluster, a cluster wider than the k loop, epilogues that load, two seeds."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from tests.wgmma_knob_cases import BF, assert_all_compile, assert_equals_the_reference, gemm

H100 = pipeline.get_target("h100")

CONFIGS = [{"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "cluster": 2},
           {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "cluster": 4, "group": 4},
           {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 6, "cluster": 2},
           {"mode": "wgmma", "BM": 64, "BN": 256, "stages": 4, "cluster": 4},
           {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "cluster": 2, "cunroll": 4},
           {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "cluster": 4, "cunroll": 2}]




# (enough 64 x 64 tiles that kernel/split.py leaves the k loop whole: one kernel)
GRAPHS = {"gemm": (300, 1800, 1000, ""), "short_k": (200, 2704, 64, ""), "bias_relu_res": (257, 2112, 1536, "bias res"),
          "mn_major": (1024, 1152, 1024, "mn")}




def test_grid_is_the_tiles_times_the_cluster_and_each_block_its_k_share():
    y = gemm(300, 1800, 1000)
    (k, _), = pipeline.lower([y.node], None, H100).kernels
    for cfg in CONFIGS:
        src, launch = cg.render_kernel(k, cfg, H100)[:2]
        tiles = -(-300 // cfg["BM"]) * -(-1800 // cfg["BN"])
        assert launch["grid"] == tiles * cfg["cluster"], cfg
        assert f"__cluster_dims__({cfg['cluster']}, 1, 1)" in src
        assert "for (int it = kb_; it < ke_;" in src and src.count("em_cluster_sync();") == 4
        assert "ld.shared::cluster.v4.f32" in src
        # (the staging waits for every consumer's k loop: it overwrites slots another consumer may still read)
        assert src.index(f'bar.sync 2, {128 * (cfg["BM"] // 64)};') < src.index("float* const st_")


def test_the_unrolled_sum_issues_every_load_before_its_adds():
    y = gemm(300, 1800, 1000)
    (k, _), = pipeline.lower([y.node], None, H100).kernels
    src = cg.render_kernel(k, {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "cluster": 2, "cunroll": 4}, H100)[0]
    assert "float4 lv_[4], ru_[4][1];" in src
    body = src[src.index("float4 lv_[4]"):]
    assert body.index("ld.shared::cluster.v4.f32") < body.index("v_.x += ru_[u][0].x")
    for bad in (3, 0):  # (16 runs a thread: 3 does not divide them)
        with pytest.raises(cg.UnsupportedKernel):
            cg.render_kernel(k, {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "cluster": 2, "cunroll": bad}, H100)


def test_refused_where_the_ring_is_not_free_or_the_size_is_not_2_or_4():
    y = gemm(300, 1800, 1000)
    (k, _), = pipeline.lower([y.node], None, H100).kernels
    base = {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4}
    for extra in ({"cluster": 3}, {"cluster": 2, "persistent": True}, {"cluster": 2, "sown": True},
                  {"cluster": 2, "BM": 64, "pingpong": True}, {"cluster": 4, "stages": 2}):
        with pytest.raises(cg.UnsupportedKernel):
            cg.render_kernel(k, dict(base, **extra), H100)


def _default(M, N, K):
    (k, _), *_ = pipeline.lower([gemm(M, N, K).node], None, H100).kernels
    return cg.default_config(k, H100)


def test_the_default_takes_two_blocks_where_the_tiles_are_few_and_the_k_loop_long(monkeypatch):
    down = _default(512, 2048, 8192)  # (the Llama-1B prefill's down: 64 tiles of 128 x 128, 128 k slices)
    assert down.get("cluster") == 2 and down["BN"] <= 128
    assert "cluster" not in _default(4096, 4096, 4096)  # (a full wave and more)
    assert "cluster" not in _default(512, 2048, 256)  # (4 k slices: under KCLUSTER_MIN_SLICES a block)
    monkeypatch.setenv("EMBER_WGMMA_KCLUSTER", "0")
    assert "cluster" not in _default(512, 2048, 8192)


def test_a_long_16bit_k_loop_is_left_whole_for_the_cluster(monkeypatch):
    """kernel/split.py's long-k rule (split in 8 through memory) skips 16-bit GEMMs on a target with long_k_cluster,
    unless EMBER_WGMMA_KCLUSTER=0; float32 keeps it."""
    def kernels(dtype):
        y = em.input("x", (512, 8192), dtype) @ em.input("w", (2048, 8192), dtype).T
        return len(pipeline.lower([y.node], None, H100).kernels)
    assert kernels("bfloat16") == 1 and kernels("float32") > 1
    monkeypatch.setenv("EMBER_WGMMA_KCLUSTER", "0")
    assert kernels("bfloat16") > 1


def test_pingpong_is_the_default_where_128_row_tiles_leave_sms_idle(monkeypatch):
    o = _default(512, 2048, 2048)  # (the prefill's o: 128 tiles of 64 x 128 against 64 of 128 x 128)
    assert o.get("pingpong") and (o["BM"], o["BN"]) == (64, 128) and "cluster" not in o
    assert not _default(512, 3072, 2048).get("pingpong")  # (qkv: two waves of it)
    assert not _default(4096, 4096, 4096).get("pingpong")
    monkeypatch.setenv("EMBER_WGMMA_PINGPONG_DEFAULT", "0")
    assert not _default(512, 2048, 2048).get("pingpong")


def test_the_search_offers_it_for_few_tiles():
    from ember.search.space import cuda_space
    (k, _), = pipeline.lower([gemm(512, 2048, 2048).node], None, H100).kernels
    assert any(c.get("cluster", 1) > 1 for c in cuda_space(k, "fast", H100))


def test_renders_and_compiles():
    pytest.importorskip("cuda.core")
    assert_all_compile(GRAPHS, CONFIGS)


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_cuda_equals_the_reference(name, i):
    assert_equals_the_reference(GRAPHS[name], CONFIGS[i])


def test_wave192_rates_a_192_wide_tile_where_it_fills_the_waves(monkeypatch):
    """cuda_wgmma_default.py's 128 x 192 rate: BERT's ff2 (96 tiles of 128 x 256) takes 128 x 192; 4096^3 not;
    EMBER_WGMMA_WAVE192=0 drops it."""
    def tile(M, N, K):
        c = _default(M, N, K)
        return c["BM"], c["BN"]
    assert tile(4096, 768, 3072) == (128, 192) and tile(4096, 4096, 4096) == (128, 256)
    monkeypatch.setenv("EMBER_WGMMA_WAVE192", "0")
    assert tile(4096, 768, 3072) == (128, 256)


def _symbolic_down():
    return em.input("x", ("n", 4096), "bfloat16") @ em.input("w", (1024, 4096), "bfloat16").T


def test_a_symbolic_row_count_takes_the_cluster_planned_for_a_prompt():
    """A prompt's rows (planned as 512) against 1024 columns over k 4096: 32 tiles of 128 x 128, so two blocks each."""
    (k, _), = pipeline.lower([_symbolic_down().node], None, H100).kernels
    assert cg.default_config(k, H100).get("cluster") == 2


@pytest.mark.cuda
def test_cuda_cluster_default_over_a_symbolic_row_count():
    y = _symbolic_down()
    prog = em.compile(y, device="cuda")
    assert any(l.config["cfg"].get("cluster") == 2 for l in prog.launches if "cfg" in l.config)
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((1024, 4096)) / 8).astype(BF)
    for n in (1, 77, 512, 1300):
        x = rng.standard_normal((n, 4096)).astype(BF)
        ref = np.asarray(em.reference([y], x=x, w=w)[0]).astype(np.float32)
        out = np.asarray(prog(x=x, w=w)).astype(np.float32)
        np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(ref).max())), err_msg=str(n))
