"""wgmma knob `mcast` (codegen/cuda_wgmma_mcast.py): two blocks of a cluster on adjacent row tiles share b's tile, each
copying half of it by TMA multicast into both. Here: the rendered launch (pairs of blocks, b's box halved, the empty
barriers counting both blocks' consumers, the cluster barriers), refusals, NVRTC (the search's offer: test_wgmma_streamk.py). On the GPU (marked
cuda): against the reference with an odd count of row tiles (the last pair's second block past the rows), MN-major
operands, epilogues that load, two seeds."""
import pytest

from ember import pipeline
from ember.codegen import cuda as cg
from tests.wgmma_knob_cases import assert_all_compile, assert_equals_the_reference, gemm, plain_only

H100 = pipeline.get_target("h100")
CONFIGS = [{"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "mcast": True},
           {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 5, "mcast": True, "group": 8},
           {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 6, "mcast": True},
           {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "mcast": True, "persistent": True, "group": 8},
           {"mode": "wgmma", "BM": 128, "BN": 128, "stages": 4, "mcast": True, "persistent": True, "sown": True, "shalf": True}]
# (odd row tiles: 300 rows are 3 of 128; 1024 x 1152 over MN-major operands; a bias + ReLU + residual epilogue)
GRAPHS = {"gemm": (300, 1800, 1000, ""), "mn_major": (1024, 1152, 1024, "mn"), "bias_relu_res": (257, 2112, 1536, "bias res")}




def test_pairs_of_blocks_share_b():
    (k, _), = pipeline.lower([gemm(300, 1800, 1000).node], None, H100).kernels
    src, launch = cg.render_kernel(k, CONFIGS[0], H100)[:2]
    assert launch["grid"] == 2 * 2 * 8  # (3 row tiles in 2 pairs, 8 column tiles)
    assert [t["box"] for t in launch["tma"]] == [[64, 128], [64, 128]]  # (b's 256 rows copied half by each block)
    assert "__cluster_dims__(2, 1, 1)" in src and "multicast::cluster" in src
    assert "em_mbar_init(bars_ + 8 * (3 + s), 16)" in src  # (both blocks' 8 consumer warps release a slot)
    assert src.count("em_cluster_sync();") == 2 and "em_mbar_arrive_pair(" in src
    persistent = cg.render_kernel(k, dict(CONFIGS[0], persistent=True), H100)[1]
    assert persistent["grid"] == 32  # (fewer pair tiles than SMs: one each)
    (big, _), = pipeline.lower([gemm(4096, 4096, 4096).node], None, H100).kernels
    assert cg.render_kernel(big, dict(CONFIGS[0], persistent=True), H100)[1]["grid"] == 132


def test_refused_where_it_does_not_apply():
    (k, _), = pipeline.lower([gemm(300, 1800, 1000).node], None, H100).kernels
    for extra in ({"cluster": 2}, {"streamk": True}, {"BM": 64, "pingpong": True}, {"occupancy": 2, "BM": 64, "BN": 64}):
        with pytest.raises(cg.UnsupportedKernel):
            cg.render_kernel(k, dict(CONFIGS[0], **extra), H100)



def test_renders_and_compiles():
    pytest.importorskip("cuda.core")
    assert_all_compile(GRAPHS, CONFIGS)


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_cuda_equals_the_reference(name, i):
    if not plain_only(GRAPHS, name, CONFIGS[i]):
        pytest.skip("shalf over a computed epilogue")
    assert_equals_the_reference(GRAPHS[name], CONFIGS[i])
