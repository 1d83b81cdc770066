"""bf16 / f16 operands whose rows are two MN-major runs — an NCHW 1x1 conv's input: the pixels of an image
contiguous, the images apart — copied by TMA a 128-byte chunk of rows at a time (each chunk inside one run)
into wgmma's transposed operand (codegen/cuda_tma.py, EMBER_WGMMA_MN_RUNS16), where they were gathered a
scalar at a time (the contraction suite's ResNet 1x1 conv: 75 us against cuDNN's 22, gpu-session47 e/).
Planned, rendered and compiled for sm_90a here; against the reference on the GPU (marked cuda)."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.codegen import cuda as cg
from ember.codegen import cuda_tma
from ember.codegen.cuda_tma import TmaOperand
from ember.kernel import layout_gemm
from tests.test_wgmma_rs import _build, _contraction  # (one contraction's config, the rest default)

CFGS = [{"mode": "wgmma", "BM": 64, "BN": 64, "stages": 4},
        {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4},
        {"mode": "wgmma", "BM": 128, "BN": 256, "stages": 3, "persistent": True}]


def _pointwise(dtype, n=3, c=40, o=72, h=16, w=20, weights_input=False, seed=0):
    """out[n, o, p] = sum_c W[o, c] x[n, c, p] over NCHW, the pixels innermost (h * w of them a run)."""
    rng = np.random.default_rng(seed)
    x = em.input("x", (n, c, h, w), dtype)
    wt = em.input("w", (o, c, 1, 1), dtype) if weights_input else \
        em.tensor((rng.standard_normal((o, c, 1, 1)) / 8).astype(np.float32)).cast(dtype)
    return em.conv2d(x, wt)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_the_pixels_are_copied_as_two_runs(dtype, monkeypatch):
    lowered = pipeline.lower([_pointwise(dtype, weights_input=True).node], None, pipeline.get_target("h100"))
    c = cg.canonical(_contraction(lowered))
    plan = cg.wgmma_applicable(c, gather=False)
    assert not isinstance(plan, str), plan
    x = [p for p in plan[1:] if isinstance(p, TmaOperand) and not p.kmajor]
    assert len(x) == 1 and x[0].r_inner == 16 * 20 and x[0].dims == [320, 40, 3]
    # the ResNet shape's default takes it (a small one may keep the mma mode)
    big = pipeline.lower([_pointwise(dtype, n=2, c=256, o=64, h=56, w=56, weights_input=True).node], None,
                         pipeline.get_target("h100"))
    assert cg.default_config(_contraction(big), pipeline.get_target("h100"))["mode"] == "wgmma"
    monkeypatch.setattr(cuda_tma, "MN_RUNS_16", False)
    monkeypatch.setattr(layout_gemm, "COLUMN_BATCH", False)  # (which would take the images as a batch instead)
    assert isinstance(cg.wgmma_applicable(c, gather=False), str)  # (gathered before)


def test_runs_a_chunk_does_not_divide_stay_gathered():
    y = _pointwise("bfloat16", h=7, w=9)  # 63 pixels (126 bytes) an image: no 16-byte stride between images
    lowered = pipeline.lower([y.node], None, pipeline.get_target("h100"))
    assert isinstance(cg.wgmma_applicable(cg.canonical(_contraction(lowered)), gather=False), str)


def test_images_not_whole_chunks_are_a_batch(monkeypatch):
    """120 pixels an image (240 bytes: whole 16-byte chunks, not whole 64-pixel ones): with COLUMN_BATCH the images
    become a batch of the contraction (cuda_wgmma.outer_columns_as_batch), a tile's columns inside one image, the
    input uncopied (kernel/layout_gemm.py leaves it); without (the default until its CUDA tests pass) it is copied
    channels-last where the copy pays, else gathered."""
    from ember.codegen import cuda_wgmma
    monkeypatch.setattr(layout_gemm, "COLUMN_BATCH", True)
    y = _pointwise("bfloat16", n=3, c=72, o=136, h=12, w=10, weights_input=True)
    lowered = pipeline.lower([y.node], None, pipeline.get_target("h100"))
    assert len(lowered.kernels) == 1
    c = cg.canonical(_contraction(lowered))
    assert [v for v, _ in cuda_wgmma.wgmma_contraction(c).batch] == [c.outer[0][0]]
    plan = cg.wgmma_applicable(c, gather=False)
    assert not isinstance(plan, str) and plan[2].dims == [120, 72, 3] and not plan[2].kmajor and plan[1].batch_vars == []
    y2 = _pointwise("bfloat16", n=8, c=256, o=136, h=12, w=10, weights_input=True)  # (enough products to copy)
    assert len(pipeline.lower([y2.node], None, pipeline.get_target("h100")).kernels) == 1
    monkeypatch.setattr(layout_gemm, "COLUMN_BATCH", False)
    assert isinstance(cg.wgmma_applicable(c, gather=False), str)
    assert len(pipeline.lower([y2.node], None, pipeline.get_target("h100")).kernels) == 2


IMAGES = {"runs": (8, 24), "batch": (12, 10)}  # 192 pixels an image (whole 64-pixel chunks), 120 (a batch of images)


def _cases():
    for dtype in ("bfloat16", "float16"):
        for i, cfg in enumerate(CFGS):
            for images in IMAGES:
                yield dtype, i, cfg, images


def test_renders_and_compiles(monkeypatch):
    pytest.importorskip("cuda.core")
    monkeypatch.setattr(layout_gemm, "COLUMN_BATCH", True)  # (the 120-pixel images as a batch)
    from tests.nvrtc_batch import compile_programs
    progs = []
    for dtype, i, cfg, images in _cases():
        h, w = IMAGES[images]
        _, prog = _build(_pointwise(dtype, h=h, w=w, weights_input=bool(i % 2)), cfg, "h100")
        assert "em_tma3" in prog.source, (dtype, i, images)
        progs.append((prog.source, (dtype, i, images)))
    failures = compile_programs(progs)
    assert not failures, "\n".join(failures[:3])


@pytest.mark.cuda
@pytest.mark.parametrize("dtype,i,cfg,images", list(_cases()))
def test_cuda_equals_the_reference(dtype, i, cfg, images, monkeypatch):
    monkeypatch.setattr(layout_gemm, "COLUMN_BATCH", True)  # (the 120-pixel images as a batch)
    h, w = IMAGES[images]
    y = _pointwise(dtype, n=3, c=72, o=136, h=h, w=w, weights_input=bool(i % 2))
    _, prog = _build(y, cfg, "cuda")
    prog.executor.poison = True
    npdt = em.dtypes.bfloat16.np if dtype == "bfloat16" else np.float16
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        ins = {"x": rng.standard_normal((3, 72, h, w)).astype(npdt)}
        if i % 2:
            ins["w"] = (rng.standard_normal((136, 72, 1, 1)) / 8).astype(npdt)
        ref = np.asarray(em.reference([y], **ins)[0]).astype(np.float32)
        out = np.asarray(prog(**ins)).astype(np.float32)
        np.testing.assert_allclose(out, ref, rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(ref).max())))
