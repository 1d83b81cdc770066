"""The tensor-core kernel's k-loop knobs, without a GPU: which defaults a contraction gets, and what
each knob renders (tests/test_cuda.py runs them on the device; test_cuda_compile compiles them)."""
import pytest

import ember as em
from ember.codegen import cuda as cg
from ember import symbolic as sm
from ember.codegen.cuda_mma import FLAT_K, flat_k, kslice_var
from ember.kernel import ir
from ember.kernel.lower import lower

MMA64 = {"mode": "mma", "BM": 64, "BN": 64, "BK": 16, "WM": 2, "WN": 2}


def _mma_kernel(y):
    ks = [k for k, _ in lower([y.node]).kernels if cg.mma_applicable(cg.canonical(k))]
    assert len(ks) == 1
    return ks[0]


def _conv():
    return em.conv2d(em.input("x", (8, 32, 40, 40)), em.input("w", (64, 32, 3, 3)), padding=1)


def test_default_knobs_follow_the_contraction():
    """Convs (several k variables) in one TF32 pass get two shared-memory stages, float32-accurate
    ones (three passes) one; a GEMM in 128x256 tiles that divide it prefetches unconditionally; a
    ragged GEMM (guarded loads) or one in small tiles does not. (Float32 GEMMs on an sm_80 target:
    on Hopper they take wgmma, tests/test_wgmma.py.)"""
    from ember.backends import target as tg
    h100 = em.get_target("h100")
    ampere = tg.with_device_values(h100, arch="sm_80", compute_capability=(8, 0), tensor_cores=("mma.sync.tf32",))
    with em.allow_tf32("conv"):
        conv = cg.default_config(_mma_kernel(_conv()))
    assert conv.get("stages") == 2 and not conv.get("pf")
    assert cg.default_config(_mma_kernel(_conv())).get("stages", 1) == 1
    aligned = cg.default_config(_mma_kernel(em.input("a", (2048, 1024)) @ em.input("b", (1024, 4096))), ampere)
    assert aligned.get("pf") is True and aligned.get("stages", 1) == 1
    ragged = cg.default_config(_mma_kernel(em.input("a", (1031, 2053)) @ em.input("b", (2053, 3079))), ampere)
    assert not ragged.get("pf") and ragged.get("stages", 1) == 1
    small = cg.default_config(_mma_kernel(em.input("a", (256, 512)) @ em.input("b", (512, 3072))), ampere)
    assert (small["BM"], small["BN"]) != (128, 256) and not small.get("pf")


def test_64_output_channels_take_the_64x128_tile():
    y = em.conv2d(em.input("x", (32, 64, 128, 128)), em.input("w", (64, 64, 3, 3)), padding=1)
    cfg = cg.default_config(_mma_kernel(y))
    assert (cfg["BM"], cfg["BN"]) == (64, 128)


def test_one_pass_convs_with_64_channels_take_one_warp_row_of_64x64_warp_tiles():
    """In one TF32 pass, a conv with 64 output channels, a light epilogue and at least 4 tiles per
    SM takes 64 x 256 in one row of 4 warps; a Mish epilogue (latency-bound at the tile's occupancy),
    a conv with few tiles, or float32 accuracy (three passes, not measured) keep 64 x 128."""
    x, w = em.input("x", (32, 64, 128, 128)), em.input("w", (64, 64, 3, 3))
    b = em.input("b", (64, 1, 1))

    def tile(y):
        cfg = cg.default_config(_mma_kernel(y))
        return cfg["BM"], cfg["BN"], cfg["WM"], cfg["WN"]
    with em.allow_tf32("conv"):
        assert tile((em.conv2d(x, w, padding=1) + b).relu()) == (64, 256, 1, 4)
        mish = em.conv2d(x, w, padding=1)
        for _ in range(2):
            mish = mish * (mish.exp() + 1).log().tanh()
        assert tile(mish) == (64, 128, 2, 2)
        few = em.conv2d(em.input("x2", (2, 64, 56, 56)), w, padding=1)
        assert tile(few)[2:] == (2, 2)
    assert tile((em.conv2d(x, w, padding=1) + b).relu()) == (64, 128, 2, 2)


def test_pipeline_knobs_render():
    k = _mma_kernel(_conv())
    plain, _ = cg.render_kernel(k, MMA64)
    assert "if (more_) {" in plain and "em_dyn_smem" not in plain
    pf, _ = cg.render_kernel(k, dict(MMA64, pf=True))
    assert "kn_ = more_ ?" in pf and pf.count("if (more_) {") == 0
    two, launch = cg.render_kernel(k, dict(MMA64, stages=2))
    assert "em_dyn_smem" in two and "s_ ^= 1;" in two
    assert launch["smem"] == 2 * 4 * 16 * (64 + 64 + 16)  # two buffers of both tiles
    ks, _ = cg.render_kernel(k, dict(MMA64, kslice=True))
    assert "ktab_" not in ks and "c0_ + kk_" in ks


def test_kslice_picks_a_k_variable_the_slice_divides():
    g = cg.contraction_of(cg.canonical(_mma_kernel(_conv())))
    v = kslice_var(g, 16)
    assert dict(g.k)[v].value == 32  # the input channel; the 3-wide filter taps do not divide
    gemm = cg.contraction_of(cg.canonical(_mma_kernel(em.input("a", (64, 64)) @ em.input("b", (64, 64)))))
    assert kslice_var(gemm, 16) is None  # one k variable: nothing to reorder
    odd = em.conv2d(em.input("x", (2, 7, 9, 9)), em.input("w", (64, 7, 3, 3)))
    with pytest.raises(cg.UnsupportedKernel, match="kslice"):
        cg.render_kernel(_mma_kernel(odd), dict(MMA64, kslice=True))


def test_bad_stage_count_is_refused():
    with pytest.raises(cg.UnsupportedKernel, match="stages"):
        cg.render_kernel(_mma_kernel(_conv()), dict(MMA64, stages=3))


def test_flat_k_for_operands_that_walk_k_contiguously():
    """A conv's weights (OIHW: channel, ky, kx contiguous) are loaded through the flat k index, with
    vector loads along k when the tile divides the problem; its input is not (a k step jumps rows
    and planes: a division stays). With `flatk` off both split k per element."""
    y = em.conv2d(em.input("x", (2, 16, 8, 16)), em.input("w", (64, 16, 3, 3)), padding=1)
    k = _mma_kernel(y)
    g = cg.contraction_of(cg.canonical(k))
    flat = [flat_k(g, v) is not None for v in (g.a, g.b)]
    assert sorted(flat) == [False, True], flat
    fv = flat_k(g, g.a if flat[0] else g.b)
    loads = [x for x in ir.val_toposort([fv]) if x.op == "load"]
    assert loads and all(sm.free_vars(x.args[1]) & {FLAT_K} for x in loads)
    on, _ = cg.render_kernel(k, MMA64)
    off, _ = cg.render_kernel(k, dict(MMA64, flatk=False))
    assert on.count("uint4") > off.count("uint4")  # the weights' 16-byte loads along k
    assert on.count("ktab_[") < off.count("ktab_[")  # only the input still reads the k table


def test_flat_k_on_both_operands_drops_the_k_table():
    """A contraction over two k variables that both operands store contiguously (a GEMM written over
    a (6, 10) block of k) needs no k split at all."""
    a, b = em.input("a", (37, 6, 10)), em.input("b", (6, 10, 45))
    y = (a.reshape(37, 6, 10, 1) * b.reshape(1, 6, 10, 45)).sum((1, 2))
    k = _mma_kernel(y)
    g = cg.contraction_of(cg.canonical(k))
    assert len(g.k) == 2 and all(flat_k(g, v) is not None for v in (g.a, g.b))
    src, _ = cg.render_kernel(k, dict(MMA64, ktab=True))
    assert "ktab_" not in src


def test_strided_conv_input_walks_its_rows_by_default():
    """A strided conv's input runs along k in memory (the filter row) but gets no vector loads that
    way; by default its tile loads walk the rows instead (one row per thread for the whole k loop).
    The knob can still force the k walk."""
    y = em.conv2d(em.input("x", (2, 8, 20, 40)), em.input("w", (64, 8, 3, 5)), stride=(1, 2), padding=2,
                  dilation=(2, 1))
    k = _mma_kernel(y)
    g = cg.contraction_of(cg.canonical(k))
    assert g.b_k_fastest
    default, _ = cg.render_kernel(k, MMA64)
    rows, _ = cg.render_kernel(k, dict(MMA64, b_kfast=False))
    kwalk, _ = cg.render_kernel(k, dict(MMA64, b_kfast=True))
    assert default == rows != kwalk


def test_many_small_batched_products_take_tensor_cores():
    """Mamba2's chunk states (KernelBench level 3, 49): 32768 products of 64 x 16 over 64 terms. Each
    is smaller than the tensor-core threshold; counted over the batch they are 33M outputs, which a
    warp per output (reducing 64 terms in 8.4M blocks) ran at 0.14x torch.compile."""
    x, b = em.input("x", (512, 64, 64)), em.input("b", (512, 64, 16))
    y = em.einsum("zlp,zln->zpn", x, b)
    assert cg.default_config(_mma_kernel(y))["mode"] == "mma"
    small = em.einsum("zlp,zln->zpn", em.input("x2", (4, 64, 64)), em.input("b2", (4, 64, 16)))  # 4K outputs
    assert cg.default_config(_mma_kernel(small))["mode"] != "mma"
    rows = em.einsum("zlp,zln->zpn", em.input("x3", (8, 64, 10)), em.input("b3", (8, 64, 1000)))  # 10 rows
    assert cg.default_config(_mma_kernel(rows))["mode"] != "mma"


def test_ragged_rows_keep_vector_loads_along_k_with_rvec():
    """A channels-last conv over ragged rows (3 x 13 x 17 pixels, no multiple of the 128-row tile):
    knob `rvec` (the default) loads each row's 4 channels as one 16-byte vector under the row's guard;
    rvec off, scalar loads; both compile for the H100 (tests/test_cuda.py checks them there)."""
    y = em.conv2d(em.input("x", (3, 13, 17, 32)).permute(0, 3, 1, 2), em.input("w", (40, 32, 3, 3)), padding=1)
    k = _mma_kernel(y)
    tile = {"mode": "mma", "BM": 32, "BN": 128, "BK": 16, "WM": 1, "WN": 4, "stages": 2}
    plain, _ = cg.render_kernel(k, dict(tile, rvec=False))
    vec, _ = cg.render_kernel(k, tile)
    assert vec.count("uint4") > plain.count("uint4")  # (the weights' loads are vectors in both)
    assert "if (gr_ < M_) {" in vec and "if (gr_ < M_) {" not in plain  # (the pixels' rows: the whole vector guarded)
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_kernels
    assert all(len(c) > 0 for c in compile_kernels(cg.PRELUDE + vec, "sm_90a").values())
    assert all(len(c) > 0 for c in compile_kernels(cg.PRELUDE + plain, "sm_90a").values())
