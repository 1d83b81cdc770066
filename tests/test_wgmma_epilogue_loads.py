"""The wgmma epilogue's loads (codegen/cuda_wgmma_epilogue.py): adjacent columns' loads paired in the
register path (knob `epair`) and the staged epilogue's walk 16 bytes a lane (knob `swide`). That both
render and compile for sm_90a (CI, no GPU), and on the GPU (mark cuda) that they match the reference
on odd shapes, bf16 and float32 residuals, several seeds."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen.cuda_wgmma_space import wgmma_configs

BF = em.bfloat16
rng = np.random.default_rng(0)


def _residual_linear(residual_dtype=BF, M=333, N=200, K=192):
    """relu(x @ w.T * scale + bias + r): a per-column scale and bias (not tiles) and a residual (a tile)."""
    x, w = em.input("x", (M, K), BF), em.input("w", (N, K), BF)
    scale = em.tensor(rng.uniform(0.5, 1.5, N).astype(np.float32))
    bias = em.tensor(rng.standard_normal(N).astype(np.float32))
    y = (x @ w.T).cast("float32") * scale + bias
    r = em.input("r", (M, N), residual_dtype)
    y = y + (r.cast("float32") if residual_dtype != "float32" else r)
    return y.relu().cast(residual_dtype)


def _build(y, cfg, device):
    cfg = {"swide": False, **cfg}  # (the register path's knobs tested as such whatever EMBER_WGMMA_SWIDE says)
    lowered = pipeline.lower([y.node], None, pipeline.get_target(device))
    cfgs = [dict(cg.default_config(k, pipeline.get_target(device)), **cfg)
            if not isinstance(cg.wgmma_applicable(cg.canonical(k)), str) else cg.default_config(k) for k, _ in lowered.kernels]
    return lowered, pipeline.build_program(lowered, device, None, "single", configs=cfgs, load=device == "cuda")


def _wgmma_kernel(lowered):
    ks = [k for k, _ in lowered.kernels if not isinstance(cg.wgmma_applicable(cg.canonical(k)), str)]
    assert len(ks) == 1
    return ks[0]


@pytest.mark.parametrize("rdt", [BF, "float32"])
def test_paired_loads_read_two_columns_at_once(rdt):
    """epair: the scale's and the bias's two columns one 8-byte load each, the residual's one 4- or 8-byte
    load; none of the three read a column alone."""
    _, prog = _build(_residual_linear(rdt), {"epair": True}, "h100")
    src = prog.source[prog.source.index("__global__ void __launch_bounds__"):]
    word = "unsigned int" if rdt == BF else "uint2"
    assert src.count("const uint2 g") >= 2 and f"const {word} g" in src
    _, off = _build(_residual_linear(rdt), {"epair": False}, "h100")
    assert "const uint2 g" not in off.source[off.source.index("__global__ void __launch_bounds__"):]


@pytest.mark.parametrize("rdt", [BF, "float32"])
def test_the_wide_staged_walk_stores_16_bytes_a_lane(rdt):
    """swide: a lane reads 4 or 8 staged accumulators as float4s and stores one uint4; the per-column
    float32 operands and the residual as 16-byte loads; an output whose columns are no whole runs of
    8 (258) keeps the column-pair walk."""
    _, prog = _build(_residual_linear(rdt), {"sepi": True, "swide": True}, "h100")
    src = prog.source[prog.source.index("__global__ void __launch_bounds__"):]
    vec = 8 if rdt == BF else 4
    assert f"float sv_[{vec}];" in src and "*reinterpret_cast<uint4*>(&" in src and src.count("const uint4 g") >= 3
    assert src.index("x3_ = ") < src.index("if (x0_ >= 0)")  # (four runs computed, then stored)
    _, implied = _build(_residual_linear(rdt), {"swide": True}, "h100")  # (swide stages the tile)
    assert f"float sv_[{vec}];" in implied.source
    _, odd = _build(_residual_linear(rdt, N=258), {"sepi": True, "swide": True}, "h100")
    src = odd.source[odd.source.index("__global__ void __launch_bounds__"):]
    assert "float sv_[" not in src and "const float2 v_" in src  # (the staged pair walk)


def test_the_search_offers_the_epilogue_load_knobs():
    lowered, _ = _build(_residual_linear(), {}, "h100")
    cfgs = wgmma_configs(cg.canonical(_wgmma_kernel(lowered)), "fast")
    assert any(c.get("epair") for c in cfgs) and any(c.get("swide") is False for c in cfgs)  # (on by default: offered off)
    default = pipeline.build_program(lowered, "h100", None, "single", load=False)
    assert "float sv_[8];" in default.source  # (the default walks 16 bytes a lane where the epilogue loads)


def test_epilogue_load_knobs_compile_for_sm90a():
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    for rdt in (BF, "float32"):
        for cfg in ({"epair": True}, {"epair": True, "BM": 64, "BN": 128, "persistent": True}, {"sepi": True, "swide": True},
                    {"sepi": True, "swide": True, "BM": 64, "BN": 128}, {"swide": True, "swunroll": 1},
                    {"swide": True, "BM": 64, "BN": 128, "occupancy": 2}):
            _, prog = _build(_residual_linear(rdt), cfg, "h100")
            assert ("float sv_[" in prog.source) == bool(cfg.get("swide"))
            assert all(len(b) > 0 for b in compile_kernels(prog.source, "sm_90a").values())


@pytest.mark.cuda
@pytest.mark.parametrize("rdt", [BF, "float32"])
def test_epilogue_load_knobs_match_the_reference_on_the_gpu(rdt):
    for seed, (M, N, K) in enumerate([(333, 200, 192), (1000, 258, 64), (4096, 512, 128)]):
        y = _residual_linear(rdt, M, N, K)
        g = np.random.default_rng(seed)
        feed = {"x": g.standard_normal((M, K)).astype(np.float32), "w": g.standard_normal((N, K)).astype(np.float32) / 8,
                "r": g.standard_normal((M, N)).astype(np.float32)}
        feed = {n: (a.astype(BF.np) if n != "r" or rdt == BF else a) for n, a in feed.items()}
        ref = np.asarray(em.reference([y], **feed)[0], np.float32)
        for cfg in ({}, {"epair": True}, {"epair": True, "BM": 64, "BN": 128, "persistent": True},
                    {"sepi": True, "swide": True}, {"sepi": True, "swide": True, "BM": 64, "BN": 256, "swunroll": 2},
                    {"swide": True, "BM": 64, "BN": 128, "occupancy": 2}, {"swide": True, "BM": 64, "BN": 64, "occupancy": 2}):
            _, prog = _build(y, cfg, "cuda")
            out = np.asarray(prog(**feed), np.float32)
            err = np.abs(out - ref).max() / np.abs(ref).max()
            assert err < 2e-2, (rdt, M, N, K, cfg, err)
