"""The counter-based random primitive (PHILOX) and the ops built on it (rand, dropout).

* the numpy Philox4x32-10 against Random123's known-answer vectors;
* the samples' statistics (uniformity, independence across seeds and neighbours);
* bit-exact agreement of the generated C (gcc, on this CPU) with the reference, for odd shapes, named
  dimensions, negative and 64-bit seeds, offsets and a seed given at run time;
* NVRTC compiles the CUDA kernels (no GPU needed);
* dropout: reproducible from the seed, the mask's rate, and its gradient is the same mask.
"""
import numpy as np
import pytest

import ember as em
from ember.graph import GraphError
from ember.primitives import ALU, GRAPH
from ember.primitives.random import philox4x32, philox_uniform

# Random123 (D. E. Shaw Research) kat_vectors: philox4x32 with 10 rounds
KAT = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
       ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
       ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
        (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_philox_known_answers(ctr, key, want):
    assert tuple(int(w) for w in philox4x32(ctr, key)) == want


def test_philox_is_one_row():
    row = GRAPH["philox"]
    assert row is ALU["philox"] and row.kind == "binary" and row.vjp is None and row.numpy is not None
    from ember.codegen import c
    assert "em_philox_uniform(long long seed, long long counter)" in c.PRELUDE


def _bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def test_rand_statistics():
    n = 1 << 18
    u = em.reference(em.rand((n,), seed=1234)).astype(np.float64)
    assert u.min() >= 0.0 and u.max() < 1.0
    # mean and variance of U[0, 1): standard errors 0.00056 and 0.00016 at n = 2^18; 6 sigma bounds
    assert abs(u.mean() - 0.5) < 6 * (1 / 12 / n) ** 0.5
    assert abs(u.var() - 1 / 12) < 6 * (1 / 180 / n) ** 0.5
    # chi-square over 64 equal bins: 63 degrees of freedom, P(chi2 > 120) < 1e-5
    counts = np.bincount((u * 64).astype(int), minlength=64)
    chi2 = ((counts - n / 64) ** 2 / (n / 64)).sum()
    assert chi2 < 120, chi2
    # neighbours and seeds are uncorrelated (|r| < 6 / sqrt(n))
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 6 / n ** 0.5
    v = em.reference(em.rand((n,), seed=1235)).astype(np.float64)
    assert abs(np.corrcoef(u, v)[0, 1]) < 6 / n ** 0.5
    # every sample is k * 2^-24: exact in float32
    assert np.all((u * 2 ** 24) == np.floor(u * 2 ** 24))


def test_rand_is_a_function_of_seed_offset_and_index():
    a = em.reference(em.rand((4, 6), seed=9))
    assert np.array_equal(_bits(a), _bits(em.reference(em.rand((4, 6), seed=9))))
    assert not np.array_equal(a, em.reference(em.rand((4, 6), seed=10)))
    # the flat index is the counter: a reshape of the same stream, and an offset shifts it
    assert np.array_equal(_bits(a.reshape(-1)), _bits(em.reference(em.rand((24,), seed=9))))
    assert np.array_equal(_bits(a.reshape(-1)[5:]), _bits(em.reference(em.rand((19,), seed=9, offset=5))))


CPU_CASES = [((7, 13), 0, 0), ((3, 1, 33), -5, 0), ((129,), 2 ** 40 + 7, 2 ** 35 - 3), ((2, 3, 5, 7), 2 ** 63 - 1, 1)]


@pytest.mark.parametrize("shape,seed,offset", CPU_CASES)
def test_rand_c_is_bit_identical_to_reference(shape, seed, offset):
    x = em.input("x", shape, em.float32)
    y = em.rand(shape, seed=seed, offset=offset) + x * 0.0
    xs = np.ones(shape, np.float32)
    got = np.asarray(em.compile(y, device="cpu")(x=xs))
    want = em.reference(y, x=xs)
    assert np.array_equal(_bits(got), _bits(want))
    assert np.array_equal(_bits(want).reshape(-1),
                          _bits(philox_uniform(seed, offset + np.arange(want.size)).astype(np.float32)))


def test_rand_runtime_seed_and_named_dims():
    s = em.input("s", (), em.int64)
    x = em.input("x", ("B", 11), em.float32)
    y = x + em.rand(x.node.shape, seed=s, offset=s * 3)
    prog = em.compile(y, device="cpu")
    for seed, rows in ((0, 3), (77, 5), (-2 ** 40, 1)):
        xs = np.zeros((rows, 11), np.float32)
        sa = np.array(seed, np.int64)
        got = np.asarray(prog(x=xs, s=sa))
        assert np.array_equal(_bits(got), _bits(em.reference(y, x=xs, s=sa)))
        assert np.array_equal(_bits(got).reshape(-1),
                              _bits(philox_uniform(seed, 3 * seed + np.arange(rows * 11)).astype(np.float32)))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_rate_scale_and_reproducibility(p):
    x = em.input("x", (64, 257), em.float32)
    xs = np.random.default_rng(0).uniform(1, 2, (64, 257)).astype(np.float32)
    y = np.asarray(em.compile(em.dropout(x, p, seed=42), device="cpu")(x=xs))
    dropped = y == 0
    n = y.size
    assert abs(dropped.mean() - p) < 6 * (p * (1 - p) / n) ** 0.5
    np.testing.assert_allclose(y[~dropped], xs[~dropped] / (1 - p), rtol=1e-6)
    again = em.reference(em.dropout(x, p, seed=42), x=xs)
    assert np.array_equal(_bits(y), _bits(again))
    other = em.reference(em.dropout(x, p, seed=43), x=xs)
    assert not np.array_equal(dropped, other == 0)


def test_dropout_gradient_is_the_same_mask():
    x = em.input("x", (9, 31), em.float32)
    w = em.input("w", (9, 31), em.float32)
    rng = np.random.default_rng(1)
    xs, ws = (rng.uniform(0.5, 2, (9, 31)).astype(np.float32) for _ in range(2))
    y = em.dropout(x, 0.4, seed=7)
    (gx,) = em.grad((y * w).sum(), [x])
    prog = em.compile([y, gx], device="cpu")
    yv, gv = (np.asarray(a) for a in prog(x=xs, w=ws))
    keep = yv != 0
    np.testing.assert_allclose(gv, np.where(keep, ws / 0.6, 0.0), rtol=1e-6)
    assert 0 < keep.mean() < 1


def test_dropout_identity_cases_and_errors():
    x = em.input("x", (3, 4), em.float32)
    assert em.dropout(x, 0.5, training=False) is x and em.dropout(x, 0.0) is x
    xs = np.ones((3, 4), np.float32)
    assert not em.reference(em.dropout(x, 1.0, seed=3), x=xs).any()
    with pytest.raises(ValueError, match="probability"):
        em.dropout(x, 1.5)
    with pytest.raises(TypeError, match="seed"):
        em.rand((3,), seed=1.5)
    with pytest.raises(TypeError, match="floating-point"):
        em.rand((3,), dtype=em.int32)
    with pytest.raises(GraphError, match="int64"):
        em.graph.binary("philox", em.full((3,), 1, em.int32).node, em.full((3,), 1, em.int32).node)


def test_rand_cuda_source_compiles_with_nvrtc():
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    from ember.codegen import cuda as cg
    from ember.kernel.lower import lower
    x = em.input("x", (5, 37), em.float16)
    s = em.input("s", (), em.int64)
    ys = [em.dropout(x, 0.3, seed=s), em.rand((3, 129), seed=2 ** 40 + 1, offset=9).sum(1)]
    srcs = set()
    for k, _ in lower([y.node for y in ys]).kernels:
        for cfg in [cg.default_config(k)] + ([{"mode": m, "threads": 128, "vec": 8} for m in ("warp", "block")]
                                             if cg.canonical(k).stages else []):
            srcs.add(cg.render_kernel(k, cfg)[0])
    assert any("em_philox_uniform" in s for s in srcs)
    for src in srcs:
        assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


def test_nn_dropout_in_training_draws_a_fresh_reproducible_mask_each_step():
    from ember import nn

    def build():
        return nn.Sequential(nn.Linear(6, 32, seed=1), nn.Dropout(0.5, seed=3), nn.Linear(32, 1, seed=2))

    x = em.input("x", (8, 6), em.float32)
    model = build().train()
    y = model(x)
    xs = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    step = {k: np.array(k, np.float32) for k in (1, 2)}
    h = model[1](model[0](x))
    masks = [em.reference(h, x=xs, step=step[k]) == 0 for k in (1, 2)]
    assert 0 < masks[0].mean() < 1 and not np.array_equal(masks[0], masks[1])  # a new mask each step
    assert np.array_equal(_bits(em.reference(y, x=xs, step=step[1])), _bits(em.reference(y, x=xs, step=step[1])))

    batch = {"x": xs, "t": np.random.default_rng(1).standard_normal((8, 1)).astype(np.float32)}

    def loss(m, b):
        return ((m(b["x"]) - b["t"]) ** 2).mean()

    compiled = em.compile_train(build().train(), loss, em.optim.SGD(lr=0.05), batch, device="cpu")
    twin = em.compile_train(build().train(), loss, em.optim.SGD(lr=0.05), batch, device="cpu")
    got = [compiled(batch) for _ in range(4)]
    want = [twin.run_reference(batch) for _ in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert len(set(got)) == 4
    for k, v in compiled.parameters().items():
        np.testing.assert_allclose(v, twin.parameters()[k], rtol=1e-5, atol=1e-6)
