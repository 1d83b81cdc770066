"""The default lowering: kernel counts (fusion really happens), views never materialised, IR checks."""
import numpy as np
import pytest

import ember as em
from ember.kernel import ir
from ember.kernel.lower import lower
from tests.conftest import assert_close


def n_kernels(y) -> int:
    ys = y if isinstance(y, (list, tuple)) else [y]
    return len(lower([t.node for t in ys]).kernels)


def test_elementwise_chain_is_one_kernel():
    x = em.input("x", (7, 13))
    b = em.input("b", (13,))
    assert n_kernels(((x * 2 + b).exp().sigmoid() - 1).relu()) == 1


def test_views_fuse_into_loads():
    x = em.input("x", (6, 10))
    y = x.T.reshape(5, 12)[:, ::2].flip(0).pad((1, 1)) + 1  # permute, reshape of permuted, slice, flip, pad
    assert n_kernels(y) == 1
    k, _ = lower([y.node]).kernels[0]
    assert all(v.args[0] == "b1" for v in ir.loads_of(k))  # reads the input directly


def test_linear_bias_activation_is_one_kernel():
    x = em.input("x", ("B", 33))
    w = em.tensor(np.random.randn(17, 33).astype(np.float32))
    b = em.tensor(np.random.randn(17).astype(np.float32))
    assert n_kernels(em.gelu(em.linear(x, w, b)) * 0.5) == 1


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_is_one_kernel(axis):
    x = em.input("x", (5, 37))
    assert n_kernels(x.softmax(axis)) == 1
    assert n_kernels(x.log_softmax(axis)) == 1


def test_layernorm_and_rmsnorm_are_one_kernel():
    x = em.input("x", ("B", 31))
    w = em.tensor(np.random.randn(31).astype(np.float32))
    assert n_kernels(em.layer_norm(x, 31, w, w)) == 1
    assert n_kernels(em.rms_norm(x, 31, w)) == 1


def test_layernorm_plus_residual_is_one_kernel():
    x = em.input("x", (4, 64))
    r = em.input("r", (4, 64))
    assert n_kernels(em.layer_norm(x + r, 64)) == 1


def test_attention_kernel_count():
    """Scores (q·kᵀ); one row kernel for the softmax (max, sum and probabilities); p·v. The default
    lowering keeps the scores in memory (flash-style fusion is the search's job); probabilities are
    materialised because their exp would otherwise be recomputed for every output column (rule 4)."""
    q = em.input("q", (2, 4, 9, 16))
    k = em.input("k", (2, 2, 11, 16))
    v = em.input("v", (2, 2, 11, 16))
    assert n_kernels(em.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)) == 3


@pytest.mark.parametrize("row_op", ["softmax", "layernorm"])
def test_row_op_after_a_matmul_is_one_kernel(row_op):
    """A matmul read by softmax's max and sum loops is materialised (rule 2); the softmax's own
    reductions then depend on the rows alone and stay in one row kernel with the normalisation:
    two kernels, not four (the matmul's dependences on columns must not count once it is in
    memory). Checked against numpy."""
    q, k = em.input("q", (3, 5, 8)), em.input("k", (3, 7, 8))
    s = em.matmul(q, k.transpose(1, 2)) * 0.3
    y = s.softmax(-1) if row_op == "softmax" else em.layer_norm(s, 7)
    assert n_kernels(y) == 2
    rng = np.random.default_rng(0)
    qs, ks = rng.standard_normal((3, 5, 8)).astype(np.float32), rng.standard_normal((3, 7, 8)).astype(np.float32)
    sc = (qs @ ks.transpose(0, 2, 1)) * 0.3
    if row_op == "softmax":
        e = np.exp(sc - sc.max(-1, keepdims=True))
        ref = e / e.sum(-1, keepdims=True)
    else:
        ref = (sc - sc.mean(-1, keepdims=True)) / np.sqrt(sc.var(-1, keepdims=True) + 1e-5)
    assert_close(em.compile(y, device="cpu")(q=qs, k=ks), ref)


def test_reduction_read_twice_by_different_kernels_is_materialised_once():
    x = em.input("x", (8, 9))
    m = x.mean(1, keepdim=True)
    y1, y2 = x - m, (x * m).sum(0)
    L = lower([y1.node, y2.node])
    temps = [b for b in L.buffers.values() if b.kind == "temp"]
    assert len(temps) == 1 and len(L.kernels) == 3


@pytest.mark.parametrize("pad", [[1, 0], [0, 2], [2, 3]])
def test_pad_after_a_keepdim_reduction_stays_one_kernel_and_is_right(pad):
    # the pad's guard is over the padded output axis, which the hoisted row reduction does not
    # depend on: it stays in the consumer's `where` (the GPU fuzzer's KernelVerifyError)
    x = em.input("x", (5, 7))
    y = em.pad(x.sum(1, keepdim=True) * 2.0, pad) + x.max(1, keepdim=True)
    assert len(lower([y.node]).kernels) == 1
    xs = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    assert_close(em.compile(y, device="cpu")(x=xs), em.reference(y, x=xs))


@pytest.mark.parametrize("groups", [4, 1])
def test_group_statistics_are_computed_once_per_group_not_per_channel(groups):
    """GroupNorm's mean and variance are read at channel // (C / groups) by a kernel over channels:
    inlined, each group's statistics would be recomputed by every channel of the group (8x the
    reads on KernelBench's GroupNorm). They get kernels of one output per (batch, group). With one
    group the statistics depend on the batch alone: one kernel over the batch, as LayerNorm."""
    C = 16
    x = em.input("x", (3, C, 9, 7))
    y = em.group_norm(x, groups)
    L = lower([y.node])
    stat_sizes = sorted(int(b.size.value) for b in L.buffers.values() if b.kind == "temp")
    if groups > 1:
        assert stat_sizes == [3 * groups, 3 * groups] and len(L.kernels) == 3
    else:
        assert stat_sizes == [] and len(L.kernels) == 1
    xs = np.random.default_rng(1).standard_normal((3, C, 9, 7)).astype(np.float32)
    torch = pytest.importorskip("torch")
    ref = torch.nn.functional.group_norm(torch.from_numpy(xs), groups).numpy()
    assert_close(em.compile(y, device="cpu")(x=xs), ref)


def test_conv_input_activation_materialised_not_recomputed():
    x = em.input("x", (1, 3, 9, 9))
    w = em.tensor(np.random.randn(4, 3, 3, 3).astype(np.float32))
    h = em.gelu(x * 2 + 1)  # expensive elementwise read through the conv's windows
    y = em.conv2d(h, w, padding=1)
    L = lower([y.node])
    assert len(L.kernels) == 2


def test_kernel_ir_verifies_prints_and_hashes_stably():
    x = em.input("x", ("B", 12))
    y = x.softmax(-1)
    k1, _ = lower([y.node]).kernels[0]
    k2, _ = lower([y.node]).kernels[0]
    ir.verify(k1)
    assert "for o0 in parallel(B)" in str(k1)
    assert k1.key == k2.key
    k3, _ = lower([(x * 3).softmax(-1).node]).kernels[0]
    assert k3.key != k1.key


def test_verify_rejects_out_of_scope_index():
    from ember import symbolic as sm
    bad = ir.Kernel("bad", (ir.BufferParam("b0", em.float32, sm.const(4), "out"),), (),
                    (ir.Store("b0", sm.var("o9", 0, 3), ir.const(1.0, em.float32)),))
    with pytest.raises(ir.KernelVerifyError, match="o9"):
        ir.verify(bad)


@pytest.mark.parametrize("make", [
    lambda x, t: ((x - t) ** 2).mean(),
    lambda x, t: x.max(),
    lambda x, t: (x * t).sum((0, 1, 2), keepdim=True),
    lambda x, t: x.abs().sum((0, 2)),
])
def test_long_reductions_into_few_values_are_split(make):
    """A reduction of >= 2^16 elements into a few values runs as a parallel partial stage plus a
    short final one (two kernels), and stays equal to the reference."""
    x, t = em.input("x", (64, 8, 1024)), em.input("t", (64, 8, 1024))
    y = make(x, t)
    L = lower([y.node])
    assert len(L.kernels) == 2
    fn = em.compile(y, device="cpu")
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        ins = {"x": rng.standard_normal((64, 8, 1024)).astype(np.float32),
               "t": rng.standard_normal((64, 8, 1024)).astype(np.float32)}
        ins = {k: v for k, v in ins.items() if k in fn.inputs}
        assert_close(fn(**ins), em.reference(y, **ins))


def test_short_or_wide_reductions_are_not_split():
    """Only long reductions into few values split."""
    x = em.input("x", (4096, 64))
    assert len(lower([x.sum().node]).kernels) == 2  # 2^18 elements into one value: split
    assert len(lower([x.sum(1).node]).kernels) == 1  # 4096 outputs: enough rows already
    y = em.input("y", (100, 100))
    assert len(lower([y.sum().node]).kernels) == 1  # 10^4 elements: short


def test_two_contractions_over_one_output_are_two_gemm_kernels():
    """Rule 6: SwiGLU's silu(x @ Wg) * (x @ Wu) is two tiled GEMMs (the second's epilogue reads the
    first), not one kernel computing two untiled dot products per output."""
    from ember.kernel.structure import canonical, contraction_of
    x, wg, wu = em.input("x", (6, 40)), em.input("wg", (24, 40)), em.input("wu", (24, 40))
    y = em.linear(x, wg).silu() * em.linear(x, wu)
    L = lower([y.node])
    assert len(L.kernels) == 2
    assert all(contraction_of(canonical(k)) is not None for k, _ in L.kernels)
    fn = em.compile(y, device="cpu")
    ins = {"x": np.random.default_rng(0).standard_normal((6, 40)).astype(np.float32),
           "wg": np.random.default_rng(1).standard_normal((24, 40)).astype(np.float32),
           "wu": np.random.default_rng(2).standard_normal((24, 40)).astype(np.float32)}
    assert_close(fn(**ins), em.reference(y, **ins))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_transposed_conv_is_one_gemm_over_phases(nd):
    """Rule 5 with ops/conv.py's phase form: the conv over phases is a plain contraction (no batch
    dims hidden behind the interleave's div/mod), and the interleave is a separate copy."""
    from ember.kernel.structure import canonical, contraction_of
    from ember.ops import conv as C
    x = em.input("x", (2, 6) + (5,) * nd)
    w = em.input("w", (6, 40) + (4,) * nd)
    y = C._conv_transpose(x, w, None, 2, 1, 0, 1, 1, nd)
    gs = [contraction_of(canonical(k)) for k, _ in lower([y.node]).kernels]
    gs = [g for g in gs if g is not None]
    assert len(gs) == 1 and not gs[0].batch, "the conv over phases should be one contraction without batch dims"


@pytest.mark.parametrize("seed", range(3))
def test_dilated_strided_transposed_conv_takes_the_phase_form(seed):
    """Stride and dilation together (KernelBench level 1's 77): the kernel dilated by a view, then
    the phase form (one contraction and an interleave, as at dilation 1) — equal to torch
    on random shapes, paddings and output paddings."""
    torch = pytest.importorskip("torch")
    from ember.kernel.structure import canonical, contraction_of
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, 4))
    s, d = [int(v) for v in rng.integers(2, 4, nd)], [int(v) for v in rng.integers(2, 4, nd)]
    k = [int(v) for v in rng.integers(2, 4, nd)]
    p = [int(rng.integers(0, kk)) for kk in k]
    op = [int(rng.integers(0, max(ss, dd))) for ss, dd in zip(s, d)]
    conv = (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)[nd - 1]
    m = conv(4, 6, k, stride=s, padding=p, dilation=d, output_padding=op)
    x = torch.randn(2, 4, *[int(v) for v in rng.integers(3, 6, nd)])
    fn = em.from_torch(m, (x,), device="cpu")
    got, want = fn(x), m(x)
    assert got.shape == want.shape and (got - want).abs().max().item() <= 1e-4 * (1 + want.abs().max().item())
    xs = em.input("x", tuple(x.shape))
    from ember.ops import conv as C
    y = C._conv_transpose(xs, em.tensor(m.weight.detach().numpy()), None, s, p, op, 1, d, nd)
    gs = [contraction_of(canonical(kk)) for kk, _ in lower([y.node]).kernels]
    assert len([g for g in gs if g is not None]) == 1


def test_phases_no_tap_reaches_are_not_computed():
    """Stride 2 with dilation 2: every tap lands on phase 0 of each axis, so the conv over phases
    has the output channels of one phase (6), not 2^3 phases' (48); the others are zeros + bias."""
    torch = pytest.importorskip("torch")
    from ember.kernel.structure import canonical, contraction_of
    from ember.ops.conv import _live_phases
    assert _live_phases(3, 2, 2) == (0, 1) and _live_phases(3, 1, 2) == (0, 2) and _live_phases(3, 3, 3) == (0, 1)
    assert _live_phases(2, 2, 3) == (0, 3)  # taps on phases 0 and 2: not a run, all computed
    m = torch.nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, dilation=2)
    x = torch.randn(2, 4, 3, 4, 5)
    fn = em.from_torch(m, (x,), device="cpu")
    assert (fn(x) - m(x)).abs().max().item() < 1e-5
    from ember.ops import conv as C
    y = C._conv_transpose(em.input("x", (2, 4, 3, 4, 5)), em.tensor(m.weight.detach().numpy()), None, 2, 1, 0, 1, 2, 3)
    gs = [g for g in (contraction_of(canonical(kk)) for kk, _ in lower([y.node]).kernels) if g is not None]
    cols = [e.value for _, e in gs[0].m + gs[0].n]
    assert 6 in cols and 48 not in cols


def test_contractions_with_few_outputs_and_long_k_are_split():
    """Split-K: (32 x 16384) @ (16384 x 48) is a batched partial GEMM over chunks of k (the chunk a
    batch dimension both operands read) and a short sum over the chunks with the epilogue; a
    contraction with enough output tiles, or a short k, is one kernel."""
    from ember.kernel.structure import canonical, contraction_of
    x, w, b = em.input("x", (32, 16384)), em.input("w", (16384, 48)), em.input("b", (48,))
    with em.allow_tf32("matmul"):
        y = ((x @ w) + b).relu()
    L = lower([y.node])
    assert len(L.kernels) == 2
    part = contraction_of(canonical(L.kernels[0][0]))
    assert part is not None and np.prod([e.value for _, e in part.batch]) > 1 and part.stage.acc.tf32
    fn = em.compile(y, device="cpu")
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        ins = {"x": rng.standard_normal((32, 16384)).astype(np.float32),
               "w": rng.standard_normal((16384, 48)).astype(np.float32),
               "b": rng.standard_normal(48).astype(np.float32)}
        assert_close(fn(**ins), em.reference(y, **ins))
    assert len(lower([(em.input("p", (2048, 2048)) @ em.input("q", (2048, 2048))).node]).kernels) == 1
    assert len(lower([(em.input("p", (32, 256)) @ em.input("q", (256, 48))).node]).kernels) == 1
    # a decoder's down projection: 32 tiles of 64 x 64 on a 132-SM GPU, k 1344 -> 8 chunks of 168
    L = lower([(em.input("p", (256, 1344)) @ em.input("q", (1344, 512))).node])
    part = contraction_of(canonical(L.kernels[0][0]))
    assert len(L.kernels) == 2 and np.prod([e.value for _, e in part.batch]) == 8
    # the partials are stored chunk-major (each chunk's 256 x 512 block whole: the tile's stores and
    # the final sum's loads stay coalesced, not 8 floats apart)
    assert f"b0[({256 * 512}*o0 + 512*o1 + o2)]" in str(L.kernels[0][0]).replace(" ", "").replace("b0[(", "b0[(")\
        or f"{256 * 512}*o0" in str(L.kernels[0][0])
    # a sum of an elementwise product (no operand broadcast along an output axis) is no GEMM
    assert len(lower([(em.input("p", (32, 16384)) * em.input("q", (32, 16384))).sum(-1).node]).kernels) == 1


def test_recurrent_state_is_not_recomputed_by_every_later_step():
    """Rule 7: an unrolled recurrence whose state feeds two kernels per step (the next step and a
    reduction) has kernels of bounded size: the state is materialised instead of re-derived from
    the start in every step's kernels (an LSTM's cost was quadratic in its steps)."""
    from ember.kernel.lower import INLINE_MAX

    def unrolled(steps):
        xs = [em.input(f"x{t}", (8, 16)) for t in range(steps)]
        c, outs = em.input("c0", (8, 16)), []
        for x in xs:
            c = c * x.sigmoid() + (x * 0.5).tanh() * (1.0 - x.sigmoid())
            outs.append(c.tanh().sum(-1))
        return [c] + outs

    def biggest(steps):
        L = lower([t.node for t in unrolled(steps)])
        return max(len(ir.print_kernel(k).splitlines()) for k, _ in L.kernels)

    assert biggest(24) <= biggest(6) + INLINE_MAX
    ys = unrolled(10)
    fn = em.compile(ys, device="cpu")
    rng = np.random.default_rng(0)
    ins = {n: rng.standard_normal((8, 16)).astype(np.float32) for n in fn.inputs}
    for out, ref in zip(fn(**ins), em.reference(ys, **ins)):
        assert_close(out, ref)


def test_small_constant_subgraphs_are_folded_at_compile_time():
    """A BatchNorm in eval mode computes 1 / sqrt(var + eps) from constants: folded into a constant,
    the fused kernel reads it per channel instead of taking a square root per element. The result
    is the reference's."""
    import numpy as np
    from ember.kernel.fold import fold_constants
    rng = np.random.default_rng(0)
    x = em.input("x", (2, 8, 5, 5))
    var = em.tensor(rng.uniform(0.5, 2.0, (8,)).astype(np.float32))
    scale = (var + 1e-5).sqrt().reciprocal().reshape(1, 8, 1, 1) if hasattr(em.Tensor, "reciprocal") else \
        (1.0 / (var + 1e-5).sqrt()).reshape(1, 8, 1, 1)
    y = (x * scale).relu()
    (k, _), = lower([y.node]).kernels
    text = str(k)
    assert "sqrt" not in text and "recip" not in text, text
    folded, = fold_constants([y.node])
    assert folded is not y.node
    fn = em.compile(y, device="cpu")
    xi = rng.standard_normal((2, 8, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(fn(x=xi), em.reference(y, x=xi), rtol=1e-6, atol=1e-6)


def test_index_arithmetic_stays_an_expression_and_the_gather_reads_the_table_directly():
    """An embedding's row offset plus the column `iota` is integer arithmetic over index patterns:
    not folded into an int table (that was a third dependent load in every rotary lookup), so the
    kernel indexes the table with the expression. A float function of indices still folds."""
    from ember.kernel.fold import fold_constants
    import ember.graph as g
    rng = np.random.default_rng(1)
    table = em.tensor(rng.standard_normal((40, 16)).astype(np.float32))
    pos = em.input("pos", (3,), em.int32)
    y = em.embedding(pos, table) * 2.0
    folded, = fold_constants([y.node])
    ints = [n for n in g.toposort([folded]) if n.op == g.DATA and n.dtype.is_int]
    assert not ints, [n.shape for n in ints]
    (k, _), = lower([y.node]).kernels
    assert len(k.buffers) == 3 and "idx(o1)" in str(k), str(k)  # the position, the table: no index table between
    pi = np.array([0, 39, 7], np.int32)
    np.testing.assert_array_equal(em.compile(y, device="cpu")(pos=pi), em.reference(y, pos=pi))
    f = (em.iota((8,), 0).cast(em.float32) * 0.5).sin() + em.input("z", (8,))
    assert any(n.op == g.DATA for n in g.toposort(fold_constants([f.node])))  # sin(0.5 i): a table


def test_a_constant_output_is_still_computed_by_a_kernel():
    from ember.kernel.fold import fold_constants
    c = em.tensor(np.arange(6, dtype=np.float32)).sqrt()
    assert fold_constants([c.node])[0] is c.node  # an output stays computed by a kernel


def test_sums_of_contractions_are_distributed():
    """A tensor read by two matmuls gets its gradient as one sum of two products (autograd adds the
    contributions at the shared broadcast view); kernel/distribute.py makes that two contractions
    (each a GEMM form), the add fused into the second's epilogue, and the result still equals the
    reference. Three readers (q, k, v) make three."""
    import numpy as np
    from ember.codegen.c import _contraction
    rng = np.random.default_rng(0)
    for readers in (2, 3):
        x = em.input("x", (33, 20))
        ws = [em.input(f"w{i}", (20, 47)) for i in range(readers)]
        y = sum(((x @ w) * (i + 1.0)).sigmoid().sum() for i, w in enumerate(ws))
        gx = em.grad(y, [x])[0]
        p = em.compile(gx, device="cpu")
        from ember import pipeline
        from ember.backends.target import get_target
        lowered = pipeline.lower([gx.node], None, get_target("cpu"))
        sums_of_products = [k for k, _ in lowered.kernels if "add(mul(" in str(k) and "reduce(47)" in str(k)]
        assert not sums_of_products, sums_of_products[0]
        assert sum(_contraction(k) is not None for k, _ in lowered.kernels) >= 2 * readers  # forward + gradient GEMMs
        ins = {"x": rng.standard_normal((33, 20)).astype(np.float32)}
        ins.update({f"w{i}": rng.standard_normal((20, 47)).astype(np.float32) for i in range(readers)})
        assert_close(p(**ins), em.reference(gx, **ins), "float32")


def test_the_depth_cut_never_materialises_a_broadcast_product(monkeypatch):
    """Rule 8 (an expression too deep to walk) cuts below a node that holds more elements than
    anything it reads: with the depth limit hit at an MLP's second product, the cut lands on its
    operand (the GELU output), not on the m x n x k product of the GEMM's broadcast operands."""
    from ember.kernel import builder
    monkeypatch.setattr(builder, "INLINE_DEPTH_MAX", 1)
    x, w1, w2 = em.input("x", (64, 32)), em.input("w1", (48, 32)), em.input("w2", (24, 48))
    y = (x @ w1.T).gelu() @ w2.T
    kernels = lower([y.node]).kernels
    biggest = max(int(b.size.value if hasattr(b.size, "value") else b.size) for k, _ in kernels for b in k.buffers)
    assert biggest <= 64 * 48, [(k.name, [b.size for b in k.buffers]) for k, _ in kernels]
    rng = np.random.default_rng(0)
    ins = {n: rng.standard_normal(s).astype(np.float32) for n, s in (("x", (64, 32)), ("w1", (48, 32)), ("w2", (24, 48)))}
    got = em.compile(y, device="cpu")(**ins)
    np.testing.assert_allclose(got, em.reference(y, **ins), rtol=1e-4, atol=1e-4)


def test_gemm_operand_prologues_become_buffers_on_wgmma_targets(monkeypatch):
    """kernel/prologue.py (opt-in): a LayerNorm's output inlined into the next GEMM as a prologue is
    materialised on a wgmma target so the GEMM's operand is a plain load TMA can copy; not on a
    target without wgmma, and the streamed attention's P is left alone. Results unchanged (CPU)."""
    from ember import pipeline
    from ember.codegen import cuda as cg
    monkeypatch.setenv("EMBER_STAGE_PROLOGUES", "1")
    # (a normalised activation's affine part, cheap enough for rule 4 to inline into the GEMM)
    xh, w = em.input("xh", (512, 768)), em.input("w", (3072, 768), "bfloat16")
    g_, b_ = em.input("g", (768,)), em.input("b", (768,))
    y = (xh * g_ + b_).cast("bfloat16") @ w.T
    h100 = pipeline.get_target("h100")
    ks = [k for k, _ in pipeline.lower([y.node], None, h100).kernels]
    assert len(ks) == 2 and not isinstance(cg.wgmma_applicable(cg.canonical(ks[1]), gather=False), str)
    ampere = h100.replace(tensor_cores=("mma.sync.tf32",))
    assert len(pipeline.lower([y.node], None, ampere).kernels) == 1
    monkeypatch.setenv("EMBER_STAGE_PROLOGUES", "0")
    ks = [k for k, _ in pipeline.lower([y.node], None, h100).kernels]
    assert len(ks) == 1 and isinstance(cg.wgmma_applicable(cg.canonical(ks[0]), gather=False), str)
    monkeypatch.setenv("EMBER_STAGE_PROLOGUES", "1")
    rng = np.random.default_rng(0)
    ins = {"xh": rng.standard_normal((512, 768)).astype(np.float32), "g": rng.standard_normal(768).astype(np.float32),
           "b": rng.standard_normal(768).astype(np.float32),
           "w": em.reference(em.tensor(rng.standard_normal((3072, 768)).astype(np.float32)).cast("bfloat16"))}
    got = np.asarray(em.compile(y, device="cpu")(**ins), np.float32)
    want = np.asarray(em.reference(y, **ins), np.float32)
    assert np.abs(got - want).max() <= 2e-2 * np.abs(want).max()


def test_an_expression_rereading_many_buffers_is_materialised():
    """Rule 7b: a residual stream (the input plus every layer's output) inlined into each layer's norm
    kernel re-reads all of them; at 256 elements or more (a decode step's rows included) it is
    materialised once it reads 3 buffers of its size, so no kernel reads the whole chain. Below
    that size it stays inlined. The values are unchanged."""
    from ember.kernel import partition

    def model(T, D=256, layers=6):
        h = em.input("e", (T, D))
        for i in range(layers):
            w = em.input(f"w{i}", (D, D))
            h = h + (h * (h * h).mean(-1, keepdim=True).rsqrt()) @ w
        return h * (h * h).mean(-1, keepdim=True).rsqrt()

    def widest(y):
        return max(len(k.buffers) for k, _ in lower([y.node]).kernels)
    big, row, tiny = model(1024), model(1, 2048), model(1, 128)
    assert widest(big) <= 5 and widest(row) <= 5 and widest(tiny) >= 7
    old = partition.REREAD_MIN
    try:
        partition.REREAD_MIN = 0  # the rule off: the last norm reads the whole chain
        assert widest(big) >= 7
    finally:
        partition.REREAD_MIN = old
    rng = np.random.default_rng(0)
    ins = {"e": rng.standard_normal((1024, 256)).astype(np.float32)}
    ins.update({f"w{i}": (rng.standard_normal((256, 256)) / 16).astype(np.float32) for i in range(6)})
    assert_close(em.compile(big, device="cpu")(**ins), em.reference(big, **ins))


def test_column_reductions_over_many_rows_split_like_gemvs():
    """A norm's weight gradient: a sum over 8192 tokens into 512 outputs whose inputs run along the
    outputs (one output per lane: 16 blocks) splits its rows (kernel/split.py, `walks_columns`); a
    row sum (inputs along the reduction) does not. Values unchanged."""
    x, s, g_ = em.input("x", (32, 256, 512)), em.input("s", (32, 256, 1)), em.input("g", (32, 256, 512))
    col = (x * s * g_).sum(axis=(0, 1))
    assert len(lower([col.node]).kernels) == 2
    assert len(lower([(x * s * g_).sum(axis=2).node]).kernels) == 1
    rng = np.random.default_rng(1)
    ins = {"x": rng.standard_normal((32, 256, 512)).astype(np.float32), "s": rng.standard_normal((32, 256, 1)).astype(np.float32),
           "g": rng.standard_normal((32, 256, 512)).astype(np.float32)}
    assert_close(em.compile(col, device="cpu")(**ins), em.reference(col, **ins))


def test_cuda_gemv_x_at_w_splits_toward_2048_blocks():
    """On the H100 preset an x @ W GEMV (W [K, N]: one output per lane) splits k into chunks of >=
    256 toward 2048 blocks of 32 outputs (backends/cuda_target.py, measured by bench/gemv_sweep.py):
    1 x 2048 @ 2048 x 8192 in 8 chunks, 1 x 8192 @ 8192 x 2048 in 32; a GEMV with 1024+ blocks of
    outputs does not split; the default policy (the CPU's) keeps the coarser split."""
    from ember import pipeline
    h100 = pipeline.get_target("h100")

    def chunks(K, N, target):
        y = em.input("x", (1, K), em.bfloat16) @ em.input("w", (K, N), em.bfloat16)
        ks = lower([y.node], target=target).kernels
        if len(ks) == 1:
            return 1
        partial = [b for b in ks[0][0].buffers if b.role == "out"][0]
        return partial.size.value // N

    assert chunks(2048, 8192, h100) == 8
    assert chunks(8192, 2048, h100) == 32
    assert chunks(2048, 65536, h100) == 1
    assert chunks(2048, 8192, None) == 1 and chunks(8192, 2048, None) == 4


def test_cuda_gemms_of_few_rows_stay_whole_as_shared_gemvs():
    """On the H100 preset a GEMM of 2..8 rows against a weight (a decode step at batch 8) is not
    split-K (`rows_gemv`) and takes warp mode with `rows` (GEMVs shared by the rows); 16 rows keep the
    split tensor-core tiles; the rows are those the larger operand is broadcast along."""
    from ember import pipeline
    from ember.codegen import cuda as cg
    from ember.kernel.contraction import gemm_rows
    h100 = pipeline.get_target("h100")

    def plan(M):
        y = em.input("x", (M, 2048), em.bfloat16) @ em.input("w", (3072, 2048), em.bfloat16).transpose(0, 1)
        ks = lower([y.node], target=h100).kernels
        return len(ks), [cg.default_config(k, h100) for k, _ in ks]

    n, cfgs = plan(8)
    assert n == 1 and cfgs[0]["mode"] == "warp" and cfgs[0].get("rows") == 8
    n, cfgs = plan(2)
    assert n == 1 and cfgs[0].get("rows") == 8
    n, cfgs = plan(16)
    assert n == 2 and cfgs[0]["mode"] != "warp"  # (split-K partials and their sum)
    x, w = em.input("x", (8, 64)), em.input("w", (512, 64))
    prod = x.unsqueeze(1) * w.unsqueeze(0)  # (8, 512, 64): w broadcast along the 8 rows
    from ember import graph as g
    s = g.reduce_node(g.SUM, prod.node, (2,))
    assert gemm_rows(s) == 8
