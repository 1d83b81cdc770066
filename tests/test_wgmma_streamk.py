"""wgmma knob `streamk` (codegen/cuda_wgmma_streamk.py): all tiles' k slices dealt out evenly to one block per SM, a
tile split between blocks summed through a workspace. Here: the segment arithmetic the kernel runs (every slice of
every tile once; one owner a tile; contributors only on a block's first segment; the owner waits on exactly the blocks
between it and the tile's last slice), the rendered launch (grid, workspace, the flag's release / acquire), refusals,
NVRTC. On the GPU (marked cuda): against the reference on ragged, few-tile and tiny GEMMs (fewer slices than blocks),
with epilogues that load, each program called twice (the flags must be lowered again for the next launch)."""
import numpy as np
import pytest

from ember import pipeline
from ember.codegen import cuda as cg
from tests.wgmma_knob_cases import assert_all_compile, assert_equals_the_reference, gemm, plain_only
from ember.codegen.cuda_wgmma_streamk import last_block, segments, workspace_bytes

H100 = pipeline.get_target("h100")


@pytest.mark.parametrize("tiles,KT,G", [(96, 32, 132), (117, 33, 132), (1, 1, 132), (3, 5, 132), (512, 64, 132),
                                        (7, 100, 13), (200, 3, 132), (132, 7, 132)])
def test_segments_cover_every_slice_once_with_one_owner_a_tile(tiles, KT, G):
    segs = segments(tiles, KT, G)
    seen = np.zeros((tiles, KT), int)
    for b, t, kb, ke in segs:
        seen[t, kb:ke] += 1
    assert (seen == 1).all()
    first = {}
    for b, t, kb, ke in segs:
        first.setdefault(b, (t, kb))
    for t in range(tiles):
        mine = [(b, kb, ke) for b, tt, kb, ke in segs if tt == t]
        owners = [b for b, kb, ke in mine if kb == 0]
        assert len(owners) == 1
        contributors = sorted(b for b, kb, ke in mine if kb > 0)
        assert all(first[b] == (t, kb) for b, kb, ke in mine if kb > 0)  # (a contributor is its block's first segment)
        last = last_block(t, KT, tiles, G)
        assert last == max(b for b, _, _ in mine)
        # the owner's wait: blocks owner+1 .. last that have any slice, exactly the contributors
        busy = [c for c in range(owners[0] + 1, last + 1) if tiles * KT * c // G != tiles * KT * (c + 1) // G]
        assert busy == contributors




CONFIGS = [{"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "streamk": True},
           {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "streamk": True, "group": 8},
           {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 6, "streamk": True},
           {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "streamk": True, "sown": True},
           {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "streamk": True, "sown": True, "shalf": True}]
GRAPHS = {"ragged": (300, 1800, 1000, ""), "few_tiles": (512, 1536, 2048, ""), "tiny": (70, 96, 64, ""),
          "bias_relu_res": (257, 520, 1536, "bias res"), "mn_major": (1024, 1152, 1024, "mn")}






def test_the_launch_is_one_block_per_sm_with_a_workspace():
    (k, _), = pipeline.lower([gemm(300, 1800, 1000).node], None, H100).kernels
    for cfg in CONFIGS[:3]:
        src, launch = cg.render_kernel(k, cfg, H100)[:2]
        assert launch["grid"] == H100.sm_count
        assert launch["workspace"] == workspace_bytes(H100.sm_count, cfg["BM"], cfg["BN"])
        assert "float* __restrict__ em_ws_" in src
        assert "st.release.gpu.global.u32" in src and "ld.acquire.gpu.global.u32" in src
        assert "sk_flag_[c_] = 0u;" in src  # (lowered again for the next launch)
        assert launch["cooperative"] and launch["per_sm"] == 1  # (its blocks wait on each other)


def test_a_grid_larger_than_the_gpu_holds_is_refused_at_load():
    """check_coresident (backends/cuda_graph.py): a stream-K launch compiled for 132 SMs on a GPU holding fewer blocks
    at once would hang; it is a one-line error instead."""
    from types import SimpleNamespace

    from ember.backends.cuda_graph import check_coresident
    from ember.backends.target import DeviceError
    kernel = SimpleNamespace(occupancy=SimpleNamespace(max_active_blocks_per_multiprocessor=lambda block, smem: 1),
                             attributes=SimpleNamespace(num_regs=168, shared_size_bytes=0, local_size_bytes=0))
    l = SimpleNamespace(kernel="k3", config={"grid": 132, "block": 384, "smem": 200000, "cooperative": True, "per_sm": 1})
    check_coresident(kernel, l, 132)
    with pytest.raises(DeviceError, match="132 blocks that wait on each other"):
        check_coresident(kernel, l, 114)


def test_refused_with_pingpong_or_a_cluster():
    (k, _), = pipeline.lower([gemm(300, 1800, 1000).node], None, H100).kernels
    for extra in ({"BM": 64, "pingpong": True}, {"cluster": 2}):
        with pytest.raises(cg.UnsupportedKernel):
            cg.render_kernel(k, dict(CONFIGS[0], **extra), H100)


def test_the_search_offers_the_unrun_knobs_only_when_asked(monkeypatch):
    """streamk and mcast (codegen/cuda_wgmma_space.unrun_knobs_on): never run on a GPU yet, their blocks wait on each
    other, so the search (which runs every candidate) tries them only with EMBER_SEARCH_UNRUN_KNOBS=1."""
    from ember.search.space import cuda_space
    (k, _), = pipeline.lower([gemm(512, 3072, 2048).node], None, H100).kernels
    assert not any(c.get("streamk") or c.get("mcast") for c in cuda_space(k, "fast", H100))
    monkeypatch.setenv("EMBER_SEARCH_UNRUN_KNOBS", "1")
    space = cuda_space(k, "fast", H100)
    assert any(c.get("streamk") for c in space) and any(c.get("mcast") for c in space)


def test_renders_and_compiles():
    pytest.importorskip("cuda.core")
    assert_all_compile(GRAPHS, CONFIGS)


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_cuda_equals_the_reference(name, i):
    if not plain_only(GRAPHS, name, CONFIGS[i]):
        pytest.skip("shalf over a computed epilogue")
    assert_equals_the_reference(GRAPHS[name], CONFIGS[i], launches=2)  # (a second launch finds the flags lowered)


def test_the_default_weighs_it_only_when_asked(monkeypatch):
    def cfg(M, N, K):
        (k, _), *_ = pipeline.lower([gemm(M, N, K).node], None, H100).kernels
        return cg.default_config(k, H100)
    assert not cfg(512, 2048, 8192).get("streamk")
    monkeypatch.setenv("EMBER_WGMMA_STREAMK", "1")
    down = cfg(512, 2048, 8192)  # (32 tiles of 128 x 256 over 128 k slices: a quarter of a wave)
    assert down.get("streamk") and (down["BM"], down["BN"]) == (128, 256)
    assert not cfg(4096, 4096, 4096).get("streamk")  # (3.9 waves: the fix-up costs more than the last wave's gap)


def test_stream_k_launches_share_one_workspace():
    """backends/cuda.py workspace_plan: launches marked workspace_shared (stream-K's) take one buffer of the largest
    size among them; any other launch's scratch (flash-decoding's counters) stays its own."""
    from types import SimpleNamespace

    from ember.backends.cuda import workspace_plan
    (k, _), = pipeline.lower([gemm(300, 1800, 1000).node], None, H100).kernels
    launch = cg.render_kernel(k, CONFIGS[1], H100)[1]
    assert launch["workspace_shared"]
    ls = [SimpleNamespace(config=c) for c in ({"workspace": 100, "workspace_shared": True}, {}, {"workspace": 64},
                                              {"workspace": 300, "workspace_shared": True})]
    plan = workspace_plan(ls)
    assert plan[0] == plan[3] == ("shared", 300) and plan[2] == (2, 64) and 1 not in plan
