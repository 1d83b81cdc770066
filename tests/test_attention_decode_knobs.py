"""Flash-decoding's knobs (codegen/cuda_flash_decode.py): keys-major products (`kt`,
codegen/cuda_flash_kt.py), the ring's copy forms (`affine`, `bulk`, `tma`), the cluster combine
gathered into rank 0 (`gather`, codegen/cuda_flash_gather.py) and the per-block phase stamps
(`trace`): compiled for sm_90a here, checked against float64 attention on the GPU (mark `cuda`)."""
import math

import numpy as np
import pytest

from ember.backends.target import get_target
from ember.kernel.lower import lower
from ember.kernel.online import online_form
from tests.test_attention import _compiles, _decode_graph


def _float64_check(cfg: dict, G: int, D: int, replays: int = 1) -> str:
    """Build one decode attention (B 2, 4 kv heads, 3001 keys: a partial last tile) with schedule
    `cfg` on the GPU, check it against float64 attention over three seeds (each `replays` times);
    returns the program's source."""
    import torch
    from ember import pipeline
    B, Hkv, Sk = 2, 4, 3001
    target = pipeline.get_target("cuda")
    lowered = pipeline.lower([_decode_graph(B, Hkv, G, Sk, D).node], None, target)
    p = pipeline.build_program(lowered, target, None, "single", configs=[cfg])
    for seed in range(3):
        torch.manual_seed(seed)
        q = torch.randn(B, Hkv, G, 1, D, device="cuda").bfloat16()
        k, v = (torch.randn(B, Hkv, Sk, D, device="cuda").bfloat16() for _ in range(2))
        s = (q.double() @ k.double().unsqueeze(2).transpose(-1, -2)) / math.sqrt(D)
        want = s.softmax(-1) @ v.double().unsqueeze(2)
        for _ in range(replays):
            assert float((p(q=q, k=k, v=v).double() - want).abs().max()) < 2e-2, seed
    return p.source


def test_decode_keys_major_products_compile_and_fall_back_over_8_rows():
    """Knob `kt` (codegen/cuda_flash_kt.py): the keys as the product's 16 rows, the group's at most 8
    query rows its columns (P^T transposed in registers by movmatrix); compiles for sm_90a at head
    dims 64 / 128, tiles of 16-64 keys, clusters and splits; a group of more than 8 rows keeps the
    row-major form."""
    from ember.codegen import cuda as cg
    t = get_target("h100")
    for G, D in ((4, 128), (7, 64), (1, 128)):
        y = _decode_graph(1, 8, G, 8192, D)
        cfgs = [{"mode": "decode", "warps": w, "BN": bn, "cluster": c, "stages": st, "splits": p, "kt": kt, "affine": af,
                 "bulk": bu}
                for w, bn, c, st, p, kt, af, bu in ((4, 16, 8, 4, 1, 1, 0, 0), (4, 32, 8, 2, 1, 2, 1, 0), (2, 64, 2, 2, 8, 1, 1, 1),
                                                    (8, 16, 1, 2, 1, 2, 0, 1), (4, 16, 8, 4, 1, 1, 0, 1))]
        k = _compiles(y, cfgs)
        src = cg.render_kernel(k, cfgs[0], t)[0]
        assert "p0_ = em_movt(" in src and "qt_[" in src and f"float o_[{D // 16}][4];" in src
        plain = cg.render_kernel(k, dict(cfgs[0], kt=0), t)[0]
        assert "p0_ = em_movt(" not in plain and f"float o_[{D // 8}][4];" in plain
        bulk = cg.render_kernel(k, cfgs[-1], t)[0]  # (knob bulk: a bulk copy per key row, an mbarrier per slot)
        assert "em_bulk(dt_" in bulk and "mbarrier.try_wait.parity" in bulk and "em_cp16(dt_" not in bulk
        assert "em_bulk(dt_" not in src
        # knob tma: tensor-map copies of 64-column boxes (one map each for K and V: keys x columns x heads)
        tcfg = dict(cfgs[0], tma=1)
        _compiles(y, [tcfg, dict(cfgs[1], tma=1)])
        tsrc, launch = cg.render_kernel(k, tcfg, t)
        assert "em_tma3(dt_" in tsrc and "em_cp16(dt_" not in tsrc and len(launch["tma"]) == 2
        assert launch["tma"][0]["dims"] == [D, 8192, 8] and launch["tma"][0]["box"] == [min(D, 64), 16, 1]
    y = _decode_graph(1, 4, 12, 4096, 128)
    k = _compiles(y, [{"mode": "decode", "warps": 4, "BN": 16, "cluster": 8, "stages": 4, "kt": 1}])
    assert "p0_ = em_movt(" not in cg.render_kernel(k, {"mode": "decode", "warps": 4, "BN": 16, "cluster": 8, "stages": 4,
                                                   "kt": 1}, t)[0]


def test_decode_gather_combines_in_rank_zero_with_one_cluster_barrier():
    """Knob `gather` (codegen/cuda_flash_gather.py): the other blocks' triples go to rank 0's shared
    memory on an mbarrier there and those blocks exit; the cluster barrier is split (arrive at the
    start, wait before the gather); not with splits or without a cluster (the default form then)."""
    from ember.codegen import cuda as cg
    t = get_target("h100")
    for D in (128, 64):
        y = _decode_graph(1, 8, 4, 8192, D)
        cfg = dict(mode="decode", warps=4, BN=16, cluster=8, stages=4, kt=1, gather=1)
        k = _compiles(y, [cfg, dict(cfg, cluster=2), dict(cfg, kt=0)])
        src, launch = cg.render_kernel(k, cfg, t)
        plain, pl = cg.render_kernel(k, dict(cfg, gather=0), t)
        body, pbody = src.split("__global__")[-1], plain.split("__global__")[-1]
        assert "em_cluster_sync()" not in body and pbody.count("em_cluster_sync()") == 2
        assert body.index("barrier.cluster.arrive.relaxed") < body.index("EM_PDL_WAIT();") < body.index("barrier.cluster.wait.acquire")
        assert "mbarrier.arrive.release.cluster.shared::cluster" in body
        assert launch["smem"] == (pl["smem"] + 15) // 16 * 16 + 8 * 4 * (D + 2) * 4
        split = cg.render_kernel(k, dict(cfg, cluster=2, splits=8), t)[0].split("__global__")[-1]
        assert "gbar_" not in split
        # gather 2: every warp's partial into rank 0 (C x W arrivals), no block barrier before it
        dcfg = dict(cfg, gather=2, warps=8 if D == 64 else 4, stages=3 if D == 64 else 4)
        _compiles(y, [dcfg, dict(dcfg, trace=1), dict(dcfg, kt=2)])
        direct, dl = cg.render_kernel(k, dcfg, t)
        dbody = direct.split("__global__")[-1]
        W = dcfg["warps"]
        assert f"mbarrier.init.shared::cta.b64 [%0], {8 * 32 * W};" in dbody and "wo_[" not in dbody
        assert dbody.count("__syncthreads") == 2 and dl["smem"] > launch["smem"]


def test_decode_tma_spec_reads_the_operands_affine_index():
    """tma_spec (knob `tma`): a [B, H, S, D] cache's map is columns x keys x the group variables
    its index reads, strides from the index's coefficients; a key count with no bound, or a head
    dim whose rows are not 16-byte multiples, gets no map."""
    from ember.codegen.cuda_flash_decode import query_vars
    from ember.codegen.cuda_flash_kt import tma_spec
    t = get_target("h100")
    for B, D in ((1, 128), (2, 64)):
        (k, _), = lower([_decode_graph(B, 8, 4, 4096, D).node], target=t).kernels
        f = online_form(k)
        qv = query_vars(f)
        groups = [(v, e) for v, e in f.rows if (v, e) not in qv]
        spec = tma_spec(f.k, f.depth_var, groups, 4096, D, 1, 16)
        assert spec["dims"][:2] == [D, 4096] and spec["strides"][0] == D and spec["box"][:2] == [min(D, 64), 16]
        assert len(spec["dims"]) == 2 + len(spec["coords"]) == len(spec["box"]) == len(spec["strides"]) + 1
        assert sorted(spec["dims"][2:]) == sorted([8] + ([B] if B > 1 else []))
        assert tma_spec(f.k, f.depth_var, groups, None, D, 1, 16) is None
        assert tma_spec(f.k, f.depth_var, groups, 4096, 48, 1, 16) is None


def test_decode_trace_stamps_its_phases_into_the_workspace_tail():
    """Knob `trace`: thread 0 of each block stamps %globaltimer at each of TRACE_POINTS into the
    launch's workspace after the splits' partials (bench/decode_trace.py reads them); the renderer
    then owns the grid-dependency wait (stamped before and after it); compiles for sm_90a."""
    from ember.codegen import cuda as cg
    from ember.codegen.cuda_flash_decode import TRACE_POINTS
    t = get_target("h100")
    y = _decode_graph(1, 8, 4, 8192, 128)
    for splits, cluster in ((1, 8), (8, 2)):
        cfg = dict(mode="decode", warps=4, BN=16, cluster=cluster, stages=4, splits=splits, kt=1, trace=1)
        k = _compiles(y, [cfg])
        src, launch = cg.render_kernel(k, cfg, t)
        plain = cg.render_kernel(k, dict(cfg, trace=0), t)[1]
        body = src.split("__global__")[-1]
        assert body.count("%globaltimer") == len(TRACE_POINTS) and "EM_GRID_DEPENDENCY" not in body
        assert body.index("EM_PDL_WAIT();") < body.index("q is in shared memory")
        blocks = 8 * splits * cluster
        assert launch["workspace"] == (plain.get("workspace", 0) + 7) // 8 * 8 + blocks * len(TRACE_POINTS) * 8


@pytest.mark.cuda
@pytest.mark.parametrize("G,D,BN,cluster,splits,kt,affine,bulk", [
    (4, 128, 16, 8, 1, 1, 0, 0), (4, 64, 32, 8, 1, 2, 1, 0), (3, 128, 16, 2, 8, 2, 1, 0), (8, 64, 64, 4, 2, 1, 1, 0),
    (1, 128, 16, 1, 1, 1, 1, 0), (4, 128, 32, 8, 1, 2, 1, 0), (4, 128, 16, 8, 1, 1, 0, 1), (5, 64, 32, 2, 8, 2, 0, 1),
    (8, 128, 32, 4, 1, 1, 0, 1), (4, 128, 16, 8, 1, 1, 0, "tma"), (3, 64, 32, 2, 8, 2, 0, "tma"),
    (8, 128, 32, 4, 1, 1, 0, "tma")])
def test_cuda_decode_keys_major_equals_torch(G, D, BN, cluster, splits, kt, affine, bulk):
    """Knob `kt` (2: two chains of score products), `affine` (each lane's chunk offsets computed
    once) and `bulk` (a bulk copy per key row on an mbarrier per slot) against float64 attention on odd key counts, several seeds and group sizes (rows of the
    8-column tile past G are padding)."""
    cfg = {"mode": "decode", "warps": 4, "BN": BN, "stages": 2, "cluster": cluster, "splits": splits, "kt": kt,
           "affine": affine, "bulk": int(bulk == 1), "tma": int(bulk == "tma")}
    assert "p0_ = em_movt(" in _float64_check(cfg, G, D)


@pytest.mark.cuda
@pytest.mark.parametrize("G,D,cluster,kt,gather,warps", [(4, 128, 8, 1, 1, 4), (1, 64, 2, 1, 1, 4), (4, 64, 4, 0, 1, 4),
                                                         (7, 128, 8, 2, 1, 4), (4, 128, 8, 1, 2, 4), (3, 64, 8, 2, 2, 8),
                                                         (8, 128, 4, 1, 2, 6), (1, 64, 2, 1, 2, 4)])
def test_cuda_decode_gather_equals_torch(G, D, cluster, kt, gather, warps):
    """Knob `gather` (2: each warp's partial straight to rank 0, codegen/cuda_flash_direct.py) against
    float64 attention on odd key counts and several seeds."""
    cfg = {"mode": "decode", "warps": warps, "BN": 16, "stages": 2, "cluster": cluster, "kt": kt, "gather": gather}
    assert "gbar_" in _float64_check(cfg, G, D)


@pytest.mark.cuda
def test_cuda_decode_trace_stamps_are_ordered_and_outputs_unchanged():
    """Knob `trace` on the GPU: the outputs still match float64 attention, and each block's stamps
    (the workspace's tail) are nonzero and in TRACE_POINTS order."""
    import torch
    from cuda.bindings import driver
    from ember import pipeline
    from ember import symbolic as sm
    from ember.codegen.cuda_flash_decode import TRACE_POINTS
    B, Hkv, G, S, D = 1, 8, 4, 3001, 128
    target = pipeline.get_target("cuda")
    lowered = pipeline.lower([_decode_graph(B, Hkv, G, S, D).node], None, target)
    cfg = {"mode": "decode", "warps": 4, "BN": 16, "stages": 4, "cluster": 8, "kt": 1, "trace": 1}
    p = pipeline.build_program(lowered, target, None, "single", configs=[cfg])
    torch.manual_seed(0)
    q = torch.randn(B, Hkv, G, 1, D, device="cuda").bfloat16()
    k, v = (torch.randn(B, Hkv, S, D, device="cuda").bfloat16() for _ in range(2))
    got = p(q=q, k=k, v=v).double()
    s = (q.double() @ k.double().unsqueeze(2).transpose(-1, -2)) / math.sqrt(D)
    assert float((got - s.softmax(-1) @ v.double().unsqueeze(2)).abs().max()) < 2e-2
    torch.cuda.synchronize()
    l = p.launches[0]
    host = np.zeros(int(l.config["workspace"]) // 8, np.uint64)
    err, = driver.cuMemcpyDtoH(host.ctypes.data, int(p.executor._workspace[0].handle), host.nbytes)
    assert int(err) == 0
    grid = int(sm.evaluate(sm.from_json(l.config["grid"]), {}))
    t = host[-grid * len(TRACE_POINTS):].reshape(grid, len(TRACE_POINTS)).astype(np.int64)
    assert (t > 0).all() and (np.diff(t, axis=1) >= 0).all()


def test_decode_default_schedule_by_head_dim_and_cache_length(tmp_path):
    """The default decode schedule (codegen/cuda_schedule.py): a known 8K cache at head dim 64 runs 8
    warps of 16-key tiles with two score chains interleaved over the cluster, a cache whose length is a named dim (a decode step
    serving every position) and head dim 128 keep 4 warps; clusters without splits gather."""
    t = get_target("h100")
    (k64, _), = lower([_decode_graph(1, 8, 4, 8192, 64).node], target=t).kernels
    assert t.default_config(k64, t) == {"mode": "decode", "warps": 8, "BN": 16, "stages": 3, "cluster": 8, "kt": 2, "gather": 1,
                                        "steal": "static"}
    (k128, _), = lower([_decode_graph(1, 8, 4, 8192, 128).node], target=t).kernels
    assert t.default_config(k128, t) == {"mode": "decode", "warps": 4, "BN": 16, "stages": 4, "cluster": 8, "kt": 1, "gather": 1}
    from ember.search.space import cuda_space  # (the search: the default first, its knobs carried over, the gather off)
    space = cuda_space(k128, "fast", t)
    assert space[0] == t.default_config(k128, t) and dict(space[0], gather=0) in space
    assert all(c.get("kt") == 1 for c in space if "splits" not in c and "affine" not in c)
    # a Llama decode step's attention: its keys the named dim P + 1, masked by the positions
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import ember.llm as L
    from ember import pipeline
    from ember.llm.model import build_step
    torch.manual_seed(0)
    hf = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=1, num_attention_heads=4,
                                  num_key_value_heads=2, vocab_size=300, max_position_embeddings=8192, head_dim=64)
    transformers.LlamaForCausalLM(hf).save_pretrained(tmp_path / "tiny")
    llm = L.load(tmp_path / "tiny", device="h100", dtype="bfloat16", max_seq_len=8192)
    outs, writes = build_step(llm.weights, 1, 1, llm.max_seq_len)
    values = list(outs.values()) if isinstance(outs, dict) else list(outs)
    lowered = pipeline.lower([o.node for o in values], None, t, writes=pipeline._state_writes(writes)[0])
    cfg, = [c for c in (t.default_config(k, t) for k, _ in lowered.kernels) if c.get("mode") == "decode"]
    assert cfg["warps"] == 4 and cfg["kt"] == 1 and cfg["cluster"] == 8


def test_decode_pipe_issues_the_next_tiles_scores_first():
    """Knob `pipe` (keys-major, a ring of >= 3 slots): tile 0's scores before the loop, each
    iteration waiting for the next tile (S - 2 groups pending) and computing its scores (sn_) before
    this tile's softmax; compiles for sm_90a; a 2-slot ring keeps the plain loop."""
    from ember.codegen import cuda as cg
    t = get_target("h100")
    for D, W, BN, S, kt in ((128, 4, 16, 4, 1), (64, 8, 16, 3, 2), (128, 4, 32, 3, 1)):
        cfg = dict(mode="decode", warps=W, BN=BN, cluster=8, stages=S, kt=kt, gather=1, pipe=1)
        k = _compiles(_decode_graph(1, 8, 4, 3001, D), [cfg, dict(cfg, early_keys=1)])
        body = cg.render_kernel(k, cfg, t)[0].split("__global__")[-1]
        assert f"cp.async.wait_group {S - 2};" in body and "float sn_[" in body
        assert body.index("em_ldsm4(a_, Kt + kof_") < body.index("for (int t_ = warp_")
        loop = body[body.index("for (int t_ = warp_"):]
        assert loop.index("sn_[m], a_") < loop.index("em_ex2(")
    plain = cg.render_kernel(k, dict(cfg, stages=2), t)[0]
    assert "sn_" not in plain


@pytest.mark.cuda
@pytest.mark.parametrize("G,D,W,BN,S,kt,cluster", [(4, 128, 4, 16, 4, 1, 8), (3, 64, 8, 16, 3, 2, 8), (8, 128, 4, 32, 3, 2, 4),
                                                   (1, 64, 4, 32, 4, 1, 2)])
def test_cuda_decode_pipe_equals_torch(G, D, W, BN, S, kt, cluster):
    """Knob `pipe` against float64 attention on odd key counts (a warp's last tile partial, warps
    without tiles), several seeds."""
    cfg = {"mode": "decode", "warps": W, "BN": BN, "stages": S, "cluster": cluster, "kt": kt, "gather": 1, "pipe": 1}
    assert "sn_" in _float64_check(cfg, G, D)


def test_decode_steal_takes_the_clusters_tiles_from_a_counter():
    """Knob `steal` (codegen/cuda_flash_steal.py): the cluster's key tiles one pool, each warp's first
    S - 1 fixed and the rest from rank 0's counter (a cluster atomic asked one iteration ahead); the
    split cluster barrier waited once, before the loop; compiles for sm_90a; not without the gather."""
    from ember.codegen import cuda as cg
    t = get_target("h100")
    for D, W, BN, S, C in ((128, 4, 16, 4, 8), (64, 8, 16, 3, 8), (128, 4, 32, 2, 4)):
        cfg = dict(mode="decode", warps=W, BN=BN, cluster=C, stages=S, kt=1, gather=1, steal=1)
        k = _compiles(_decode_graph(1, 8, 4, 3001, D), [cfg, dict(cfg, early_keys=1)])
        body = cg.render_kernel(k, cfg, t)[0].split("__global__")[-1]
        assert body.count("atom.shared::cluster.add.u32") == 2 and body.count("barrier.cluster.wait") == 1
        assert f"steal_ = {(S - 1) * C * W}u;" in body and "barrier.cluster.arrive.release" in body
        assert body.index("barrier.cluster.wait") < body.index("for (; t_ < ntk_; ++it_)")
    assert "steal_" not in cg.render_kernel(k, dict(cfg, gather=0), t)[0].split("__global__")[-1]
    # "static": the same interleave of the cluster's tiles, no counter
    st = dict(cfg, steal="static")
    _compiles(_decode_graph(1, 8, 4, 3001, 128), [st])
    sbody = cg.render_kernel(k, st, t)[0].split("__global__")[-1]
    assert "steal_" not in sbody and f"t_ += {cfg['cluster'] * cfg['warps']}" in sbody and "gw_ + " in sbody


@pytest.mark.cuda
@pytest.mark.parametrize("G,D,W,BN,S,kt,cluster,steal", [(4, 128, 4, 16, 4, 1, 8, 1), (3, 64, 8, 16, 3, 2, 8, 1),
                                                         (8, 128, 4, 32, 2, 1, 4, 1), (1, 64, 4, 32, 5, 2, 2, 1),
                                                         (4, 128, 4, 16, 4, 1, 8, "static"), (3, 64, 8, 16, 3, 2, 4, "static")])
def test_cuda_decode_steal_equals_torch(G, D, W, BN, S, kt, cluster, steal):
    """Knob `steal` (and its counter-free "static" interleave) against float64 attention on odd key
    counts and several seeds, replayed (with early keys: tests/test_attention_decode_early.py)."""
    cfg = {"mode": "decode", "warps": W, "BN": BN, "stages": S, "cluster": cluster, "kt": kt, "gather": 1, "steal": steal}
    src = _float64_check(cfg, G, D, replays=2)  # (a replay after the first: rank 0's counter starts afresh)
    assert ("steal_" in src) == (steal == 1) and "gw_" in src
