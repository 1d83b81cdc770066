"""The packed GEMM form of the C renderer (codegen/c_gemm.py) against float64 numpy.

The form is forced on every contraction kernel (whatever its size or the CPU's vector width: the
generated C uses gcc vector extensions, correct on any x86), with small blocks so that the edges of
every loop level (MR, NR, MC, KC, NC remainders, K > KC partial sums) are crossed by small shapes."""
import numpy as np
import pytest

import ember as em
from ember import pipeline
from ember.backends.target import get_target
from ember.codegen import c as cgen
from tests.conftest import assert_close

SMALL = {"form": "packed", "mr": 8, "nr": 32, "mc": 16, "kc": 24, "nc": 64}


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def build(y, cfg=SMALL, require=True):
    """Compile y on the CPU with `cfg` for every contraction kernel (the default for the others)."""
    target = get_target("cpu")
    ts = list(y) if isinstance(y, tuple) else [y]
    lowered = pipeline.lower([t.node for t in ts], None, target)
    configs = [dict(cfg) if cgen._contraction(k) is not None else target.default_config(k, target)
               for k, _ in lowered.kernels]
    prog = pipeline.build_program(lowered, target, None, "single" if len(ts) == 1 else "tuple", configs=configs)
    assert "_uk(" in prog.source or not require, "no kernel took the packed form"
    return prog


def matmul_case(M, N, K, cfg=SMALL, seeds=(0, 1)):
    x, w = em.input("x", (M, K)), em.input("w", (K, N))
    fn = build(x @ w, cfg, require=min(M, N, K) > 1)  # a 1-wide matmul is a dot product or an outer product
    for s in seeds:
        a, b = rnd(M, K, seed=s), rnd(K, N, seed=s + 7)
        assert_close(fn(x=a, w=b), a.astype(np.float64) @ b.astype(np.float64), "float32")


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (7, 31, 33), (33, 7, 127), (129, 31, 7), (31, 129, 131),
                                   (127, 33, 1), (1, 257, 50), (300, 65, 97)])
def test_odd_shapes(M, N, K):
    matmul_case(M, N, K)


def test_every_tile_remainder():
    """M and N ranging over every remainder modulo MR and NR, in one program each."""
    for M in range(1, 17):
        matmul_case(M, 3 + 8 * M % 29, 29, seeds=(0,))
    for N in range(1, 33):
        matmul_case(9, N, 26, seeds=(0,))


@pytest.mark.parametrize("mr,nr,kc", [(8, 32, 384), (6, 32, 256), (12, 32, 64), (4, 64, 384), (1, 16, 5)])
def test_tile_configs(mr, nr, kc):
    matmul_case(45, 101, 403, cfg=dict(SMALL, mr=mr, nr=nr, kc=kc, mc=4 * mr, nc=3 * nr), seeds=(2,))


def test_default_blocks_large_odd():
    matmul_case(263, 517, 1031, cfg=cgen.c_gemm.DEFAULT, seeds=(0,))


def test_transposed_operands():
    x, w = em.input("x", (37, 53)), em.input("w", (45, 53))  # nn.Linear: x @ W.T
    fn = build(x @ w.transpose(0, 1))
    a, b = rnd(37, 53, seed=1), rnd(45, 53, seed=2)
    assert_close(fn(x=a, w=b), a.astype(np.float64) @ b.astype(np.float64).T, "float32")
    x2 = em.input("x", (45, 37))  # W.T @ x
    fn = build(w.transpose(0, 1) @ x2)
    c = rnd(45, 37, seed=3)
    assert_close(fn(w=b, x=c), b.astype(np.float64).T @ c.astype(np.float64), "float32")


@pytest.mark.parametrize("B", [1, 3])
def test_batched_matmul(B):
    x, w = em.input("x", (B, 19, 41)), em.input("w", (B, 41, 35))
    fn = build(x @ w)
    for s in (0, 1):
        a, b = rnd(B, 19, 41, seed=s), rnd(B, 41, 35, seed=s + 1)
        assert_close(fn(x=a, w=b), a.astype(np.float64) @ b.astype(np.float64), "float32")


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_epilogue_bias_activation_scale(act):
    x, w, bias = em.input("x", (29, 67)), em.input("w", (67, 43)), em.input("bias", (43,))
    h = x @ w + bias
    y = (h.relu() if act == "relu" else h.gelu()) * 0.5
    fn = build(y)
    for s in (0, 1):
        a, b, c = rnd(29, 67, seed=s), rnd(67, 43, seed=s + 1), rnd(43, seed=s + 2)
        ref = em.reference(y, x=a, w=b, bias=c)
        assert_close(fn(x=a, w=b, bias=c), ref, "float32")


def test_unaligned_inputs():
    """Numpy views offset by one float (4-byte aligned only) are read through the packing loops."""
    x, w = em.input("x", (33, 71)), em.input("w", (71, 47))
    fn = build(x @ w)
    ba, bb = rnd(33 * 71 + 1, seed=4), rnd(71 * 47 + 1, seed=5)
    a, b = ba[1:].reshape(33, 71), bb[1:].reshape(71, 47)
    assert a.ctypes.data % 8 != 0
    assert_close(fn(x=a, w=b), a.astype(np.float64) @ b.astype(np.float64), "float32")


def test_default_config_picks_packed_for_large_f32_matmul():
    x, w = em.input("x", (512, 512)), em.input("w", (512, 512))
    lowered = pipeline.lower([(x @ w).node], None, get_target("cpu"))
    (k, _), = lowered.kernels
    assert cgen.default_config(k, wide=True)["form"] == "packed"
    assert cgen.default_config(k, wide=False)["form"] != "packed"
    small = pipeline.lower([(em.input("x", (4, 5)) @ em.input("w", (5, 6))).node], None, get_target("cpu"))
    assert cgen.default_config(small.kernels[0][0], wide=True)["form"] != "packed"
    assert any(c["form"] == "packed" for c in cgen.space(k))


def test_symbolic_rows():
    """A named (runtime) dimension: the nest's bounds come from the call's dims."""
    x, w = em.input("x", ("B", 37)), em.input("w", (37, 45))
    fn = build(x @ w)
    for rows in (1, 9, 40):
        a, b = rnd(rows, 37, seed=rows), rnd(37, 45, seed=1)
        assert_close(fn(x=a, w=b), a.astype(np.float64) @ b.astype(np.float64), "float32")


@pytest.mark.parametrize("nr", [16, 32])
def test_swapped_roles(nr):
    """cfg swap: C computed transposed (the few output columns on the MR side), epilogue included."""
    x, w, bias = em.input("x", (53, 61)), em.input("w", (10, 61)), em.input("bias", (10,))
    y = (x @ w.transpose(0, 1) + bias).relu()
    fn = build(y, dict(SMALL, swap=True, nr=nr))
    a, b, c = rnd(53, 61, seed=1), rnd(10, 61, seed=2), rnd(10, seed=3)
    assert_close(fn(x=a, w=b, bias=c), em.reference(y, x=a, w=b, bias=c), "float32")


@pytest.mark.parametrize("mr", [7, 10, 14])
def test_swapped_tiles_on_convolutions(mr):
    """The default's transposed micro-tiles (`choose_tiles`) on small-output convolutions with
    constant weights (prepacked on the swapped side), output sizes crossing every remainder of MR."""
    for hw, cout, seed in ((7, 19, 0), (5, 33, 1), (14, 8, 2)):
        x = em.input("x", (1, 6, hw, hw))
        y = em.conv2d(x, em.tensor(rnd(cout, 6, 3, 3, seed=seed)), padding=1).relu()
        fn = build(y, dict(SMALL, swap=True, mr=mr, mc=3 * mr))
        assert "Pre_" in fn.source, "the weights were not prepacked on the swapped side"
        feed = {"x": rnd(1, 6, hw, hw, seed=seed + 5)}
        assert_close(fn(**feed), em.reference(y, **feed), "float32")


@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, 3, 1), (2, 1, 2), (1, 0, 1), (3, 2, 1)])
@pytest.mark.parametrize("swap", [False, True])
def test_padded_convolutions_with_epilogues(stride, padding, dilation, swap):
    """Packing a padded conv's input reads the span of each run where the padding's guards hold
    without them (`_guard_window`), and the epilogue addresses the output through the flat column
    index (`_through_flat_n`): bias, a residual read at the output's own position, an activation;
    odd sizes so runs start and end inside the padding."""
    for hw, cin, cout, kk, seed in ((13, 3, 10, 7, 0), (9, 5, 17, 3, 1), (6, 2, 9, 5, 2)):
        n = 2 if seed == 1 else 1  # (a batch of one: the output's columns are its flat pixels)
        x = em.input("x", (n, cin, hw, hw + 2))
        w, b = em.tensor(rnd(cout, cin, kk, kk, seed=seed)), em.tensor(rnd(cout, seed=seed + 1))
        if hw + 2 * padding < dilation * (kk - 1) + 1:
            continue  # (no window fits)
        y = em.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation)
        res = em.input("res", tuple(y.shape))
        y = (y + res).relu()
        fn = build(y, dict(SMALL, swap=swap, mr=7 if swap else 8))
        assert ("g0_" in fn.source or padding == 0) and ("fn_ =" in fn.source or swap or n > 1)
        feed = {"x": rnd(n, cin, hw, hw + 2, seed=seed + 3), "res": rnd(*y.shape, seed=seed + 4)}
        assert_close(fn(**feed), em.reference(y, **feed), "float32")

def test_tile_choice_follows_padding():
    """choose_tiles: 8 x 32 where it pads nothing; C transposed where the 32-wide tiles would pad
    the output columns and the output is small (ResNet-18's 14x14 and 7x7 stages); never
    transposed for a large output."""
    from ember.codegen.c_gemm import DEFAULT, choose_tiles
    assert choose_tiles(1, 64, 3136) == DEFAULT  # 56 x 56 x 64: no padding
    assert choose_tiles(1, 128, 784) == DEFAULT  # 400 KB output: the transposed store is too scattered
    assert choose_tiles(1, 256, 196)["swap"] and choose_tiles(1, 256, 196)["mr"] == 14
    assert choose_tiles(1, 512, 49)["swap"] and 49 % choose_tiles(1, 512, 49)["mr"] in (0, 9)
    assert choose_tiles(1, 128, 384) == DEFAULT  # a transformer's projection: the gain is too small
    assert choose_tiles(64, 256, 196) == DEFAULT  # the same conv at batch 64: a large output

@pytest.mark.parametrize("layout", ["x @ W.T", "W @ x", "conv"])
def test_constant_weights_are_packed_once_per_program(layout):
    """Weights captured as constants (data nodes) are packed on the first call and kept by the
    program (cfg `prepack`), across edge tiles (M, N not multiples of the micro-tile, K over KC
    blocks). The packed weights live in each program's executor (never in the shared library), so
    two programs with different weights and repeated calls all stay right."""
    def make(seed):
        if layout == "x @ W.T":
            x = em.input("x", (37, 61))
            y = x @ em.tensor(rnd(29, 61, seed=seed)).T
            feed = {"x": rnd(37, 61, seed=9)}
        elif layout == "W @ x":
            x = em.input("x", (61, 45))
            y = em.tensor(rnd(35, 61, seed=seed)) @ x
            feed = {"x": rnd(61, 45, seed=9)}
        else:
            x = em.input("x", (2, 5, 9, 11))
            y = em.conv2d(x, em.tensor(rnd(13, 5, 3, 3, seed=seed)), padding=1)
            feed = {"x": rnd(2, 5, 9, 11, seed=9)}
        return y, feed
    progs = []
    for seed in (0, 1):
        y, feed = make(seed)
        fn = build(y)
        assert "Pre_" in fn.source, "the constant operand was not prepacked"
        progs.append((fn, y, feed))
    for _ in range(2):
        for fn, y, feed in progs:
            assert_close(fn(**feed), em.reference(y, **feed), "float32")


def test_packed_form_takes_symbolic_rows_and_half_products():
    """A projection over a named number of rows (a prompt) and float16/bfloat16 products take the
    packed form and match the reference; a half-precision GEMV keeps the half-byte forms."""
    import numpy as np

    import ember as em
    from ember.backends.cpu import has_avx512
    if not has_avx512():
        pytest.skip("the packed form is the default only with AVX-512")
    rng = np.random.default_rng(0)
    for dtype in (em.float32, em.bfloat16, em.float16):
        for rows in ("T", 1):
            x = em.input("x", (rows, 96), dtype)
            w = em.tensor((rng.standard_normal((200, 96)) * 0.1).astype(dtype.np))
            y = (x @ w.transpose(0, 1)).silu()
            p = em.compile(y, device="cpu")
            packed = "_uk(" in p.source
            if rows == "T":
                assert packed, dtype.name
            elif dtype != em.float32:
                assert not packed, dtype.name
            for T in ((1, 7, 130) if rows == "T" else (1,)):
                xv = rng.standard_normal((T, 96)).astype(dtype.np)
                got, want = p(x=xv).astype(np.float32), em.reference(y, x=xv).astype(np.float32)
                tol = 1e-5 if dtype == em.float32 else 2e-2
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# ---------------------------------------------------------------- the bfloat16 micro-kernel (AVX-512 BF16)

def _need_bf16():
    from ember.backends.cpu import has_avx512_bf16
    if not has_avx512_bf16():
        pytest.skip("the bfloat16 micro-kernel needs AVX-512 BF16 (vdpbf16ps)")


BF = dict(SMALL, bf16=True)


def bf_case(M, N, K, cfg=BF, seed=0, const=False):
    import ml_dtypes
    a = (rnd(M, K, seed=seed) * 0.5).astype(ml_dtypes.bfloat16)
    b = (rnd(K, N, seed=seed + 7) * 0.5).astype(ml_dtypes.bfloat16)
    x = em.input("x", (M, K), em.bfloat16)
    w = em.tensor(b) if const else em.input("w", (K, N), em.bfloat16)
    y = (x @ w).cast(em.float32)
    fn = build(y, cfg, require=min(M, N, K) > 1)  # (a 1-wide product is not a contraction kernel)
    assert "_mm512_dpbf16_ps" in fn.source or min(M, N, K) == 1
    got = fn(x=a) if const else fn(x=a, w=b)
    # products exact in float32 and summed in float32 (one rounding per add, as vdpbf16ps does)
    assert_close(got, a.astype(np.float64) @ b.astype(np.float64), "float32")


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (7, 31, 33), (33, 7, 127), (129, 31, 7), (31, 129, 131), (12, 32, 2)])
def test_bf16_odd_shapes_and_odd_k(M, N, K):
    _need_bf16()
    bf_case(M, N, K)


def test_bf16_every_tile_remainder():
    _need_bf16()
    for M in range(1, 14):
        bf_case(M, 3 + 8 * M % 29, 29)
    for N in range(1, 33):
        bf_case(9, N, 27)


@pytest.mark.parametrize("mr,kc", [(8, 24), (12, 768), (6, 256), (12, 2)])
def test_bf16_tile_configs_and_prepacked_weights(mr, kc):
    _need_bf16()
    cfg = dict(BF, mr=mr, kc=kc, mc=4 * mr, nc=64)
    bf_case(45, 101, 403, cfg, seed=2)
    bf_case(45, 101, 403, cfg, seed=3, const=True)


def test_bf16_is_the_default_for_large_bfloat16_products_on_such_cpus():
    _need_bf16()
    x = em.input("x", (256, 512), em.bfloat16)
    y = x @ em.input("w", (512, 384), em.bfloat16)
    p = em.compile(y, device="cpu")
    assert "_mm512_dpbf16_ps" in p.source
    f = em.compile((em.input("x", (256, 512)) @ em.input("w", (512, 384))), device="cpu")
    assert "_mm512_dpbf16_ps" not in f.source and "_uk(" in f.source  # float32 keeps its kernel


# ---------------------------------------------------------------- row caches (codegen/c_rowcache.py)

@pytest.mark.parametrize("shape", [(5, 1000), (3, 7), (2, 3, 9000)])
def test_softmax_row_cache(shape):
    """A softmax's exponentials are kept in a per-row array by the sum and read back by the
    normalising loop (one exp2 per element); rows longer than the cap recompute them. Both forms
    match the reference, on rows of every length class."""
    from ember.codegen.c_rowcache import MAX_ELEMS
    x = em.input("x", shape)
    y = (x * 0.5).softmax(-1) + 1.0
    p = em.compile(y, device="cpu")
    assert ("em_rc0[" in p.source) == (shape[-1] <= MAX_ELEMS)
    a = rnd(*shape, seed=len(shape))
    assert_close(p(x=a), em.reference(y, x=a), "float32")


def test_row_cache_needs_the_same_value():
    """A later loop reading a different exponential (another scale) gets no cache."""
    x = em.input("x", (4, 64))
    y = x.exp() / x.exp().sum(-1, keepdim=True) + (x * 2).exp()
    p = em.compile(y, device="cpu")
    a = rnd(4, 64, seed=3)
    assert_close(p(x=a), em.reference(y, x=a), "float32")
