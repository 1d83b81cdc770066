"""Rewrite 0d of the contraction layouts (kernel/layout_gemm.py): a GEMM's operands read from padded
K-major copies where TMA cannot take them (ragged rows; a float32 [K, N] operand in TF32). The
rewritten graph evaluates like the original on random inputs (several shapes and seeds); on the H100
target both operands become TMA copies and the wgmma kernel compiles."""
import numpy as np
import pytest

import ember as em
from ember import graph as g
from ember.backends.target import get_target
from ember.codegen import cuda as cg
from ember.kernel import layout, layout_gemm
from ember.kernel.lower import lower
from ember.reference import evaluate

H100 = get_target("h100")


@pytest.fixture(autouse=True)
def _enabled(monkeypatch):
    monkeypatch.setattr(layout_gemm, "ENABLED", "1")


def _gemm_kernel(y):
    return next(k for k, _ in lower([y.node], target=H100).kernels if cg.contraction_of(cg.canonical(k)) is not None)


def _relaid(roots):
    return layout_gemm.aligned_gemm_layouts(layout.contraction_layouts(roots, H100), H100)


def _check(y, feed, rtol=1e-5):
    roots = [y.node]
    new = _relaid(roots)
    assert new != roots
    want, = evaluate(roots, feed, {})
    got, = evaluate(new, feed, {})
    want, got = np.asarray(want, np.float64), np.asarray(got, np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * float(np.abs(want).max()))
    return new


@pytest.mark.parametrize("seed", range(3))
def test_a_ragged_tf32_gemm_reads_padded_k_major_copies(seed):
    rng = np.random.default_rng(seed)
    # odd sizes: no row is whole chunks (M x N large enough not to be split over k: a split GEMM's
    # copies are inlined back into its chunks, which keep the gather)
    M, K, N = (int(v) | 1 for v in (rng.integers(1000, 1400), rng.integers(300, 700), rng.integers(1000, 1400)))
    with em.allow_tf32():
        a, b = em.input("a", (M, K)), em.input("b", (K, N))
        y = a @ b
        new = _check(y, {"a": rng.standard_normal((M, K)).astype(np.float32),
                         "b": rng.standard_normal((K, N)).astype(np.float32)})
        copies = [nd for nd in g.toposort(new) if nd.op == g.CAST and nd.dtype == nd.srcs[0].dtype]
        assert len(copies) == 2
        k = _gemm_kernel(y)
    plan = cg.wgmma_applicable(cg.canonical(k))
    assert plan[0] == "tf32" and all(type(f).__name__ == "TmaOperand" and f.kmajor for f in plan[1:]), plan
    assert cg.default_config(k)["mode"] == "wgmma"
    if seed == 0:
        pytest.importorskip("cuda.core")
        from ember.backends.cuda import compile_cuda
        assert len(compile_cuda(cg.PRELUDE + "\n" + cg.render_kernel(k, cg.default_config(k))[0], "sm_90a")) > 0


@pytest.mark.parametrize("rs", [False, True])
def test_an_aligned_tf32_x_at_w_copies_only_the_transposed_operand(monkeypatch, rs):
    """Without the RS form w is copied K-major; with it (the default) nothing is: the wgmma kernel loads
    w's fragments from its MN-major tile into registers (codegen/cuda_wgmma_rs.py)."""
    monkeypatch.setattr(layout_gemm, "RS", rs)
    rng = np.random.default_rng(4)
    with em.allow_tf32():
        a, w = em.input("a", (256, 512)), em.input("w", (512, 384))
        y = a @ w
    if rs:  # (the graph as it was)
        assert _relaid([y.node]) == [y.node]
        return
    new = _check(y, {"a": rng.standard_normal((256, 512)).astype(np.float32), "w": rng.standard_normal((512, 384)).astype(np.float32)})
    copies = [nd for nd in g.toposort(new) if nd.op == g.CAST and nd.dtype == nd.srcs[0].dtype]
    assert len(copies) == 1 and copies[0].shape[-1].value == 512  # w stored [N, K]


def test_constant_weights_are_padded_and_transposed_at_compile_time():
    rng = np.random.default_rng(5)
    W = rng.standard_normal((515, 301)).astype(np.float32)
    with em.allow_tf32():
        x = em.input("x", (1027, 515))
        new = _check((x @ em.tensor(W)).relu(), {"x": rng.standard_normal((1027, 515)).astype(np.float32)})
    data = [nd for nd in g.toposort(new) if nd.op == g.DATA]
    # [N, Kp]: k padded to whole chunks in every part of a split (KPAD of them)
    Kp = -(-515 // (4 * layout_gemm.KPAD)) * 4 * layout_gemm.KPAD
    assert any(tuple(s.value for s in nd.shape) == (301, Kp) for nd in data)


@pytest.mark.parametrize("seed", range(2))
def test_a_ragged_bf16_batched_gemm_over_computed_operands(seed):
    rng = np.random.default_rng(seed)
    B, M, K, N = 3, 129 + 2 * seed, 203, 517
    a, b = em.input("a", (B, M, K), "bfloat16"), em.input("b", (B, K, N), "bfloat16")
    y = a.relu() @ (b * 2)
    _check(y, {"a": rng.standard_normal((B, M, K)).astype(np.float32).astype(em.bfloat16.np),
               "b": rng.standard_normal((B, K, N)).astype(np.float32).astype(em.bfloat16.np)}, rtol=2e-2)


def test_aligned_gemms_and_the_flag_off_are_left_alone(monkeypatch):
    a, b = em.input("a", (256, 512), "bfloat16"), em.input("b", (512, 384), "bfloat16")
    roots = [(a @ b).node]
    assert _relaid(roots) == roots  # bf16 reads [K, N] rows through TMA as they are
    a, b = em.input("a", (512, 1024)), em.input("b", (1024, 768))  # float32 products (torch's precision):
    roots = [(a @ b).node]  # tf32x3 copies the [K, N] operand through its staging ring as it is
    assert _relaid(roots) == roots
    monkeypatch.setattr(layout_gemm, "ENABLED", "0")
    with em.allow_tf32():
        roots = [(em.input("a", (301, 203)) @ em.input("b", (203, 517))).node]
    assert _relaid(roots) == roots


def test_a_gemm_split_over_k_keeps_its_copies():
    """A ragged TF32 GEMM with few tiles is split over k: its copies are still stored (kernel/
    prologue.py stages every explicit copy), each part a whole number of chunks, so TMA takes both."""
    with em.allow_tf32():
        y = em.input("a", (641, 555)) @ em.input("b", (555, 505))
        ks = [k for k, _ in lower([y.node], target=H100).kernels]
    gemm = next(k for k in ks if cg.contraction_of(cg.canonical(k)) is not None)
    plan = cg.wgmma_applicable(cg.canonical(gemm))
    assert len(cg.contraction_of(cg.canonical(gemm)).batch) == 1  # (the parts of the split)
    assert all(type(f).__name__ == "TmaOperand" for f in plan[1:]), plan


def test_ragged_gemm_runs_on_the_cpu_with_the_rewrite(monkeypatch):
    """The rewritten graph through the whole CPU pipeline (lowering, copies, C), against float64."""
    monkeypatch.setenv("EMBER_CONTRACTION_LAYOUTS", "1")
    rng = np.random.default_rng(9)
    with em.allow_tf32():
        a, b = em.input("a", (67, 203)), em.input("b", (203, 131))
        y = (a @ b).relu()
        prog = em.compile(y, device="cpu")
    A, Bm = rng.standard_normal((67, 203)).astype(np.float32), rng.standard_normal((203, 131)).astype(np.float32)
    want = np.maximum(A.astype(np.float64) @ Bm.astype(np.float64), 0)
    np.testing.assert_allclose(np.asarray(prog(a=A, b=Bm)), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("flag", ["0", "1"])
def test_a_split_gemm_stages_its_computed_operand_only_when_asked(monkeypatch, flag):
    """An MLP's last layer (relu(h) @ W.T, few tiles: split over k): EMBER_STAGE_SPLIT_PROLOGUES=1
    stores relu(h) for TMA (kernel/prologue.py); otherwise the split kernel gathers it."""
    from ember.kernel import prologue
    monkeypatch.setattr(prologue, "SPLIT", flag)
    rng = np.random.default_rng(1)
    h = em.input("h", (1024, 4096))
    W = em.tensor(rng.standard_normal((1000, 4096)).astype(np.float32))
    k = _gemm_kernel(h.relu() @ W.T)
    plan = cg.wgmma_applicable(cg.canonical(k))
    assert len(cg.contraction_of(cg.canonical(k)).batch) == 1  # (split over k)
    tma = [type(f).__name__ == "TmaOperand" for f in plan[1:]]
    assert all(tma) == (flag == "1"), plan


def test_an_operand_computed_from_a_reduction_is_not_copied():
    """Attention's probabilities (softmax over 300 keys: rows of 600 bytes) stream through the flash
    kernel unstored; a copy of them would split it, so only the GEMM's other operands may be copied."""
    s = em.input("s", (4, 300, 300), "bfloat16")
    v = em.input("v", (4, 300, 64), "bfloat16")
    roots = [(s.softmax(-1) @ v).node]
    assert _relaid(roots) == roots
    roots = [(s.relu() @ v).node]  # (an elementwise operand of the same shape is copied)
    assert _relaid(roots) != roots


def test_a_memory_bound_gemm_keeps_its_operands(monkeypatch):
    """A TF32 [K, N] operand is copied K-major only where the GEMM does enough work per byte it moves
    (layout_gemm.MIN_INTENSITY): a 1x1 conv's 64 -> 128 channels streams its input once either way
    (KernelBench 87: the copy measured 10% slower), 256 -> 256 is copied. (Without the RS form, which
    copies neither.)"""
    monkeypatch.setattr(layout_gemm, "RS", False)
    with em.allow_tf32():
        thin = [(em.input("w", (128, 64)) @ em.input("x", (64, 65536))).node]
        wide = [(em.input("w", (256, 256)) @ em.input("x", (256, 16384))).node]
    assert _relaid(thin) == thin
    assert _relaid(wide) != wide


def test_unit_trailing_axes_are_not_rows_and_short_k_pads_to_whole_chunks():
    """A 1x1 conv's [O, C, 1, 1] weights have rows of C (64 bf16: whole chunks), not of 1: nothing to
    copy (ResNet-50's 1x1 convs had been copied with k padded 64 -> 128). A ragged k too short for a
    split over k pads to whole chunks only (70 -> 72, not 128)."""
    from ember.kernel.split import reduced_length
    w = em.input("w", (256, 64, 1, 1), "bfloat16")
    roots = [em.conv2d(em.input("x", (32, 64, 56, 56), "bfloat16").relu(), w).node]
    lowered_roots = layout.contraction_layouts(roots, H100)
    assert layout_gemm.aligned_gemm_layouts(lowered_roots, H100) == lowered_roots
    a, b = em.input("a", (1031, 70), "bfloat16"), em.input("b", (70, 3079), "bfloat16")
    new = _relaid([(a @ b).node])
    sums = [n for n in g.toposort(new) if n.op == g.SUM]
    assert [reduced_length(n) for n in sums] == [72]
