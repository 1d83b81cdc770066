"""Channels-last contraction layouts (kernel/layout.py) and what reads them: the rewritten graphs equal
the originals (the reference and torch, CPU, layouts forced on with EMBER_CONTRACTION_LAYOUTS=1),
which graphs they touch (bf16/f16/float32 convs) and leave alone (GEMMs, attention), the split of a
conv's taps (kernel/split.py), and on the H100 target, offline: a 3x3 conv takes `wgmma` with its
input gathered as 16-byte chunks and compiles for sm_90a."""
import contextlib

import numpy as np
import pytest

import ember as em
from ember import dtypes as dt
from ember import graph as g
from ember.backends.target import get_target
from ember.codegen import cuda as cg
from ember.kernel import layout
from ember.kernel.lower import lower
from ember.reference import evaluate

torch = pytest.importorskip("torch")
nn = torch.nn
H100 = get_target("h100")


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setenv("EMBER_CONTRACTION_LAYOUTS", "1")


@pytest.fixture
def counted(monkeypatch):
    """How often each rewrite fired."""
    hits = {"relaid": 0, "reordered": 0}
    relaid, reordered = layout._relaid, layout._reordered_sum

    def r(x, order):
        hits["relaid"] += 1
        return relaid(x, order)

    def s(old, n):
        m = reordered(old, n)
        hits["reordered"] += m is not n
        return m
    monkeypatch.setattr(layout, "_relaid", r)
    monkeypatch.setattr(layout, "_reordered_sum", s)
    return hits


class Bottleneck(nn.Module):
    """ResNet's block at small sizes, with a strided / dilated / grouped variant."""

    def __init__(self, cin=16, mid=8, stride=1, dilation=1, groups=1):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid)
        self.c2 = nn.Conv2d(mid, mid, 3, stride, dilation, dilation=dilation, groups=groups, bias=False)
        self.b2 = nn.BatchNorm2d(mid)
        self.c3, self.b3 = nn.Conv2d(mid, cin, 1), nn.BatchNorm2d(cin)
        self.down = nn.Conv2d(cin, cin, 1, stride) if stride != 1 else None

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class Net(nn.Module):
    def __init__(self, block):
        super().__init__()
        cin = block.c1.in_channels
        self.stem, self.pool, self.block = nn.Conv2d(3, cin, 3, padding=1), nn.MaxPool2d(3, 2, 1), block

    def forward(self, x):
        return self.block(self.pool(torch.relu(self.stem(x))))


def _check(module, x, dtype, counted):
    torch.manual_seed(0)
    for p in module.modules():
        if isinstance(p, nn.BatchNorm2d):  # non-trivial statistics
            p.running_mean.uniform_(-0.5, 0.5)
            p.running_var.uniform_(0.5, 1.5)
    module = module.eval().to(dtype)
    x = x.to(dtype)
    got = em.from_torch(module, (x,), device="cpu")(x).float()
    want = module.float()(x.float())
    scale = want.abs().max().item()
    assert (got - want).abs().max().item() <= 0.03 * scale + 1e-3
    return counted


@pytest.mark.parametrize("kw", [{}, {"stride": 2}, {"dilation": 2}, {"groups": 2}, {"cin": 24, "mid": 16}])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_resnet_blocks_equal_torch_with_layouts(forced, counted, kw, dtype):
    torch.manual_seed(1)
    hits = _check(Net(Bottleneck(**kw)), torch.randn(2, 3, 10, 9), dtype, counted)
    assert hits["relaid"] >= 2 and hits["reordered"] >= 1  # activations and weights relaid, 3x3 reordered


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.Sequential(nn.Conv1d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv1d(16, 8, 5, stride=2)), (2, 8, 21)),
    (lambda: nn.Sequential(nn.Conv3d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv3d(16, 8, 1)), (1, 8, 5, 6, 7)),
    (lambda: nn.Sequential(nn.Conv2d(8, 16, 3), nn.ReLU(), nn.ConvTranspose2d(16, 8, 3, stride=2)), (2, 8, 7, 6)),
    (lambda: nn.Sequential(nn.Conv2d(8, 12, 3, padding=1), nn.ReLU(), nn.Conv2d(12, 8, 3, padding=1)), (2, 8, 7, 6)),
    (lambda: nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1, groups=16)),
     (2, 8, 7, 6)),
])
def test_other_convs_equal_torch_with_layouts(forced, counted, make, shape):
    torch.manual_seed(2)
    _check(make(), torch.randn(*shape), torch.bfloat16, counted)


def _relaid_graph(y):
    roots = [y.node]
    return roots, layout.contraction_layouts(roots, H100)


def test_gemms_and_attention_are_left_alone():
    a = em.input("a", (256, 64), "bfloat16").relu()
    roots, new = _relaid_graph(a.T @ em.input("b", (256, 32), "bfloat16"))  # x.T @ g: rows one run
    assert new == roots
    q, k, v = (em.input(n, (2, 4, 64, 32), "bfloat16") for n in "qkv")
    p = (q @ k.transpose(-1, -2)).softmax(-1).cast("bfloat16")
    roots, new = _relaid_graph(p @ v.relu())  # V's rows (head dim) one run, batch outside
    assert new == roots


def _random_conv_graph(rng, dtype):
    n, c, h, w = 2, 16, int(rng.integers(5, 9)), int(rng.integers(5, 9))
    x = em.input("x", (n, c, h, w), dtype)
    w1 = em.tensor(rng.standard_normal((16, c, 3, 3)).astype(np.float32)).cast(dtype)
    y = em.conv2d(x.relu() * 0.5, w1, padding=int(rng.integers(0, 3)), stride=int(rng.integers(1, 3)),
                  dilation=int(rng.integers(1, 3))).relu()
    w2 = em.tensor(rng.standard_normal((8, 16, 1, 1)).astype(np.float32)).cast(dtype)
    return (x, em.conv2d(y, w2) + 1.0)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("seed", range(4))
def test_rewritten_graph_evaluates_like_the_original(seed, dtype):
    """The reference interpreter on both graphs: padded, strided, dilated windows composed onto the
    channels-last buffer (layout.compose) address the same elements."""
    rng = np.random.default_rng(seed)
    x, y = _random_conv_graph(rng, dtype)
    roots, new = _relaid_graph(y)
    assert new != roots
    feed = {"x": rng.standard_normal(tuple(s.value for s in x.node.shape)).astype(getattr(dt, dtype).np)}
    want, = evaluate(roots, feed, {})
    got, = evaluate(new, feed, {})
    tol = 0.03 if dtype == "bfloat16" else 1e-5
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", ["conv", "transposed", "conv3d"])
@pytest.mark.parametrize("tf32", [True, False])
def test_float32_conv_over_a_graph_input_reads_a_channels_last_copy(case, tf32):
    """A float32 conv whose input is the caller's NCHW tensor: the input copied once into a
    channels-last buffer (a same-type cast, relaid), the weights transposed at compile time; the
    rewritten graph evaluates like the original; on the H100 the conv takes `wgmma` (TF32, or
    3xTF32 at float32 accuracy) with its input gathered as 16-byte chunks, and compiles."""
    rng = np.random.default_rng(7)
    ctx = em.allow_tf32() if tf32 else contextlib.nullcontext()
    with ctx:
        if case == "conv":
            x = em.input("x", (4, 16, 23, 29))
            y = em.conv2d(x, em.tensor(rng.standard_normal((64, 16, 3, 5)).astype(np.float32)), padding=(1, 2), stride=(1, 2))
        elif case == "transposed":
            x = em.input("x", (4, 16, 19, 20))
            y = em.conv_transpose2d(x, em.tensor(rng.standard_normal((16, 64, 3, 3)).astype(np.float32)), padding=1)  # (stride 2: phases, mma)
        else:
            x = em.input("x", (2, 8, 9, 10, 11))
            y = em.conv3d(x, em.tensor(rng.standard_normal((64, 8, 3, 3, 3)).astype(np.float32)), padding=1)
        y = y.relu()
    roots, new = _relaid_graph(y)
    copies = [nd for nd in g.toposort(new) if nd.op == g.CAST and nd.dtype == nd.srcs[0].dtype]
    assert len(copies) == 1
    feed = {"x": rng.standard_normal(tuple(s.value for s in x.node.shape)).astype(np.float32)}
    want, = evaluate(roots, feed, {})
    got, = evaluate(new, feed, {})
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    ks = _conv_kernels(y)
    plan = cg.wgmma_applicable(cg.canonical(ks[-1]))
    assert plan[0] == ("tf32" if tf32 else "tf32x3"), plan
    assert any(getattr(f, "vector", None) is not None for f in plan[1:])
    if case == "transposed":  # its taps read backwards: the constant flipped, so TMA copies it
        assert any(nd.op == g.DATA and ".flip" in nd.arg.name for nd in g.toposort(new))
        assert any(type(f).__name__ == "TmaOperand" for f in plan[1:])
    cfg = cg.default_config(ks[-1])
    assert cfg["mode"] == "wgmma"
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    assert len(compile_cuda(cg.PRELUDE + "\n" + cg.render_kernel(ks[-1], cfg)[0], "sm_90a")) > 0


def test_a_batched_product_over_a_flattened_operand_copies_no_input():
    """NetVLAD (KernelBench level 3, 47): softmax(x W) over B*N rows, viewed [B, N, K] and
    transposed, times x [B, N, D]. The first operand's flattened axis (b * N + n) looks like a window
    (an output and a summed variable on one axis); the copy belongs to a window's own operand, and x
    is not one: copied, it came out as an identity copy of 419 MB (18% of the problem's time)."""
    B, N, D, K = 64, 100, 512, 32
    x = em.input("x", (B, N, D))
    a = (x.reshape(B * N, D) @ em.input("w", (D, K))).softmax(-1).reshape(B, N, K)
    roots, new = _relaid_graph(a.transpose(1, 2) @ x)
    assert not [nd for nd in g.toposort(new) if nd.op == g.CAST and nd.dtype == nd.srcs[0].dtype]


def _conv_kernels(y):
    low = lower([y.node], target=H100)
    return [k for k, _ in low.kernels if cg.contraction_of(cg.canonical(k)) is not None]


def test_h100_3x3_conv_takes_wgmma_with_chunked_gather():
    rng = np.random.default_rng(0)
    x = em.input("x", (8, 64, 28, 28), "bfloat16")
    y = em.conv2d(x, em.tensor(rng.standard_normal((64, 64, 1, 1)).astype(np.float32)).cast("bfloat16")).relu()
    y = em.conv2d(y, em.tensor(rng.standard_normal((64, 64, 3, 3)).astype(np.float32)).cast("bfloat16"), padding=1)
    k1, k3 = _conv_kernels(y)
    kind, a, b = cg.wgmma_applicable(cg.canonical(k3))
    gathered = [f for f in (a, b) if type(f).__name__ == "GatherOperand"]
    assert kind == "bf16" and len(gathered) == 1 and gathered[0].vector is not None
    cfg = cg.default_config(k3)
    assert cfg["mode"] == "wgmma"
    src = cg.render_kernel(k3, dict(cfg, im2col=False))[0]  # (the gather; by default TMA's im2col copy walks it)
    assert "reinterpret_cast<const uint4*>" in src
    walked = cg.render_kernel(k3, cfg)[0]
    assert ".im2col" in walked and "reinterpret_cast<const uint4*>" not in walked
    cuda_core = pytest.importorskip("cuda.core")  # noqa: F841
    from ember.backends.cuda import compile_cuda
    assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


def test_long_conv_with_few_tiles_splits_on_its_taps():
    """Layer 4 of a ResNet-50 at batch 32 (7 x 7 pixels, k = 9 x 512, too few tiles for the SMs):
    split on the taps, each chunk's input a chunked load (no flattened k to divide); and the split
    form of a small conv (the policy forced to 8 chunks: 9 taps) evaluates like the original."""
    rng = np.random.default_rng(0)
    x = em.input("x", (32, 512, 7, 7), "bfloat16")
    y = em.conv2d(x, em.tensor(rng.standard_normal((512, 512, 1, 1)).astype(np.float32)).cast("bfloat16")).relu()
    y = em.conv2d(y, em.tensor(rng.standard_normal((512, 512, 3, 3)).astype(np.float32)).cast("bfloat16"), padding=1)
    plans = [cg.wgmma_applicable(cg.canonical(k)) for k in _conv_kernels(y)]
    chunked = [p for p in plans if not isinstance(p, str) and any(getattr(f, "vector", None) is not None for f in p[1:])]
    assert len(plans) == 2 and len(chunked) == 1

    import dataclasses

    from ember.kernel.split import split_long_reductions
    x = em.input("x", (1, 128, 5, 5), "bfloat16")
    y = em.conv2d(x.relu(), em.tensor(rng.standard_normal((16, 128, 3, 3)).astype(np.float32)).cast("bfloat16"),
                  padding=1)
    policy = dataclasses.replace(H100.split, tile=1 << 30, tiles_few=1, k_long=1, long_chunks=8, long_k_cluster=False)
    split = split_long_reductions(layout.contraction_layouts([y.node], H100), policy)
    sums = [n for n in g.toposort(split) if n.op == g.SUM]
    assert len(sums) == 2 and sorted(len(n.arg) for n in sums) == [1, 2]  # the channels inside, the taps outside
    feed = {"x": rng.standard_normal((1, 128, 5, 5)).astype(dt.bfloat16.np)}
    want, = evaluate([y.node], feed, {})
    got, = evaluate(split, feed, {})
    want, got = np.asarray(want, np.float32), np.asarray(got, np.float32)
    np.testing.assert_allclose(got, want, rtol=0.03, atol=0.03 * float(np.abs(want).max()))


@pytest.mark.parametrize("seed", range(3))
def test_a_three_channel_stem_is_padded_to_a_chunk_and_takes_wgmma(seed):
    """ResNet's stem (3 RGB channels, 7 x 7, stride 2, padding 3): the channels padded to 8 with
    zeros (the weights at compile time, the input by a channels-last copy the lowering stages), the
    rewritten graph evaluates like the original, and on the H100 the conv takes `wgmma` with its
    input gathered as 16-byte chunks and compiles."""
    rng = np.random.default_rng(seed)
    n, c, hw, k = 2, 3, int(rng.integers(9, 15)), int(rng.choice([3, 7]))
    x = em.input("x", (n, c, hw, hw), "bfloat16")
    w = em.tensor(rng.standard_normal((16, c, k, k)).astype(dt.bfloat16.np))
    y = em.conv2d(x, w, stride=2, padding=k // 2).relu()
    roots, new = _relaid_graph(y)
    assert any(nd.op == g.DATA and nd.shape[-1].value == 8 for nd in g.toposort(new))  # [O, kh, kw, 8]
    feed = {"x": rng.standard_normal((n, c, hw, hw)).astype(dt.bfloat16.np)}
    want, = evaluate(roots, feed, {})
    got, = evaluate(new, feed, {})
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=0.03, atol=0.03)
    if seed == 0:  # at a size whose padded copy the lowering stages (kernel/prologue.py)
        x = em.input("x", (8, 3, 96, 96), "bfloat16")
        y = em.conv2d(x, em.tensor(rng.standard_normal((64, 3, 7, 7)).astype(dt.bfloat16.np)), stride=2, padding=3)
        ks = _conv_kernels(y)
        plan = cg.wgmma_applicable(cg.canonical(ks[0]))
        assert len(ks) == 1 and cg.default_config(ks[0])["mode"] == "wgmma"
        assert any(getattr(f, "vector", None) is not None for f in plan[1:])  # the input as 16-byte chunks
        pytest.importorskip("cuda.core")
        from ember.backends.cuda import compile_cuda
        assert len(compile_cuda(cg.PRELUDE + "\n" + cg.render_kernel(ks[0], cg.default_config(ks[0]))[0], "sm_90a")) > 0


@pytest.mark.parametrize("seed", range(2))
def test_a_stem_with_input_weights_stores_its_padded_weights_channels_last(seed):
    """The seed-000 conv's form (3 -> 4 channels, an 11 x 11 window, stride 4) with its weights a
    graph input (a training step's, a benchmark's): the padded weight copy is stored [O, kh, kw, C]
    (its k row one run), so both operands are 16-byte rows and the float32 default takes `wgmma`.
    Left [O, C, kh, kw], the weights were gathered one element at a time and the default fell back to
    `mma` over the relaid input (the H100: 2.39 ms against eager's 0.97, gpu-session35-2026-11-28/c)."""
    rng = np.random.default_rng(seed)
    n, hw = 2, int(rng.integers(30, 40))
    x, w = em.input("x", (n, 3, hw, hw)), em.input("w", (32, 3, 11, 11))
    y = em.conv2d(x, w, stride=4, padding=2)
    roots, new = _relaid_graph(y)
    feed = {"x": rng.standard_normal((n, 3, hw, hw)).astype(np.float32),
            "w": rng.standard_normal((32, 3, 11, 11)).astype(np.float32)}
    want, = evaluate(roots, feed, {})
    got, = evaluate(new, feed, {})
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    big = em.conv2d(em.input("x", (100, 3, 224, 224)), em.input("w", (96, 3, 11, 11)), stride=4, padding=2)
    ks = _conv_kernels(big)
    plan = cg.wgmma_applicable(cg.canonical(ks[-1]))
    assert not any(type(f).__name__ == "GatherOperand" and f.vector is None for f in plan[1:]), plan
    assert cg.default_config(ks[-1])["mode"] == "wgmma"


@pytest.mark.parametrize("copy_weights", ["0", "1"])
def test_input_weights_are_copied_channels_last_unless_told_not_to(monkeypatch, copy_weights):
    """A 3x3 conv whose input and weights are both graph inputs: both copied channels-last by default
    (a wgmma conv over im2col copies), the rewritten graph evaluating like the original;
    EMBER_COPY_INPUT_WEIGHTS=0 copies nothing (mma over NCHW)."""
    monkeypatch.setattr(layout, "COPY_WEIGHTS", copy_weights)
    rng = np.random.default_rng(3)
    x, w = em.input("x", (8, 32, 37, 41)), em.input("w", (64, 32, 3, 3))
    roots, new = _relaid_graph(em.conv2d(x, w, padding=1))
    copies = [nd for nd in g.toposort(new) if nd.op == g.CAST and nd.dtype == nd.srcs[0].dtype]
    assert len(copies) == (2 if copy_weights == "1" else 0)
    feed = {"x": rng.standard_normal((8, 32, 37, 41)).astype(np.float32), "w": rng.standard_normal((64, 32, 3, 3)).astype(np.float32)}
    want, = evaluate(roots, feed, {})
    got, = evaluate(new, feed, {})
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


@pytest.mark.parametrize("copy_mn", ["0", "1"])
def test_a_tf32_pointwise_conv_over_an_input_copies_it_only_when_asked(monkeypatch, copy_mn):
    """KernelBench's pointwise conv (TF32, the caller's NCHW input): with EMBER_COPY_MN_INPUTS=1 the
    input is copied channels-last and both wgmma operands are TMA copies (TF32 wgmma has no
    transposed form: the NCHW input was gathered a float at a time); the graph evaluates the same."""
    monkeypatch.setattr(layout, "COPY_MN", copy_mn)
    rng = np.random.default_rng(5)
    with em.allow_tf32():
        x = em.input("x", (4, 64, 33, 35))
        y = em.conv2d(x, em.tensor(rng.standard_normal((128, 64, 1, 1)).astype(np.float32)))
        roots, new = _relaid_graph(y)
        copies = [nd for nd in g.toposort(new) if nd.op == g.CAST and nd.dtype == nd.srcs[0].dtype]
        assert len(copies) == (1 if copy_mn == "1" else 0)
        feed = {"x": rng.standard_normal((4, 64, 33, 35)).astype(np.float32)}
        want, = evaluate(roots, feed, {})
        got, = evaluate(new, feed, {})
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
        if copy_mn == "1":
            ks = _conv_kernels(y)
            plan = cg.wgmma_applicable(cg.canonical(ks[-1]))
            assert plan[0] == "tf32" and all(type(f).__name__ == "TmaOperand" for f in plan[1:]), plan
            assert cg.default_config(ks[-1])["mode"] == "wgmma"
            pytest.importorskip("cuda.core")
            from ember.backends.cuda import compile_cuda
            assert len(compile_cuda(cg.PRELUDE + "\n" + cg.render_kernel(ks[-1], cg.default_config(ks[-1]))[0], "sm_90a")) > 0


@pytest.mark.parametrize("min_m,swap", [(64, "0"), (32, "0"), (64, "1")])
def test_a_32_channel_conv_takes_wgmma_only_below_the_row_threshold(monkeypatch, min_m, swap):
    """The real KernelBench's 78 in form (32 -> 32 channels, 3 x 7): `mma` with the swapped default off
    (a 64-row wgmma tile half full); with EMBER_WGMMA_MIN_M=32 the default takes that tile; by default
    (EMBER_WGMMA_SWAP_DEFAULT=1) wgmma with rows and columns swapped, persistent; each compiles."""
    from ember.codegen import cuda_schedule
    monkeypatch.setattr(cuda_schedule, "WGMMA_MIN_M", min_m)
    monkeypatch.setenv("EMBER_WGMMA_SWAP_DEFAULT", swap)
    rng = np.random.default_rng(2)
    with em.allow_tf32():
        x = em.input("x", (2, 32, 67, 131))
        ks = _conv_kernels(em.conv2d(x, em.tensor(rng.standard_normal((32, 32, 3, 7)).astype(np.float32))))
    cfg = cg.default_config(ks[-1])
    assert cfg["mode"] == ("wgmma" if min_m == 32 or swap == "1" else "mma")
    assert bool(cfg.get("swap")) == (min_m == 64 and swap == "1") == bool(cfg.get("persistent")), cfg
    if cfg["mode"] == "wgmma":
        pytest.importorskip("cuda.core")
        from ember.backends.cuda import compile_cuda
        assert len(compile_cuda(cg.PRELUDE + "\n" + cg.render_kernel(ks[-1], cfg)[0], "sm_90a")) > 0


@pytest.mark.cuda
@pytest.mark.parametrize("precision", ["torch", "float32"])
@pytest.mark.parametrize("make, shape", [
    (lambda: nn.Conv2d(16, 64, (3, 5), padding=(1, 2), stride=(1, 2)), (4, 16, 23, 29)),
    (lambda: nn.Conv2d(3, 64, 11, stride=4, padding=2), (4, 3, 67, 71)),  # AlexNet's stem: 3 -> 4 channels
    (lambda: nn.ConvTranspose2d(32, 64, (3, 7)), (2, 32, 21, 17)),
    (lambda: nn.Conv3d(8, 64, 3, padding=1), (2, 8, 9, 10, 11)),
    (lambda: nn.Sequential(nn.Conv2d(16, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1)), (2, 16, 19, 23)),
])
def test_float32_convs_over_graph_inputs_equal_torch_on_the_gpu(precision, make, shape):
    """Float32 convs read through a channels-last copy of the caller's NCHW tensor, in TF32
    (`precision="torch"`, as cuDNN) or 3xTF32 (float32 accuracy), two seeds, against float64."""
    from ember.precision import TF32_TOL
    torch.manual_seed(0)
    module = make().cuda()
    tol = TF32_TOL if precision == "torch" else 1e-5
    fn = None
    for seed in (0, 1):
        torch.manual_seed(seed)
        x = torch.randn(*shape, device="cuda")
        if fn is None:
            fn = em.from_torch(module, (x,), device="cuda", precision=precision)
        got = fn(x).double()
        want = module.double()(x.double())
        module.float()
        err = (got - want).abs().max().item() / want.abs().max().item()
        assert err <= tol, (seed, err)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("n, c, hw, o, k, stride, pad", [(4, 32, (29, 31), 64, 3, 1, 1), (2, 64, (15, 13), 72, 3, 2, 1)])
def test_convs_over_input_weights_equal_torch_on_the_gpu(dtype, n, c, hw, o, k, stride, pad):
    """A conv whose weights are a graph input too (a training step's): both copied channels-last by
    default, the conv in wgmma; odd sizes, two seeds, against float64 (float32 at float32 accuracy)."""
    x, w = em.input("x", (n, c, *hw), dtype), em.input("w", (o, c, k, k), dtype)
    y = em.conv2d(x, w, stride=stride, padding=pad)
    fn = em.compile(y, device="cuda")
    assert "wgmma" in {l.config.get("mode") for l in fn.launches}
    tdt = getattr(torch, dtype)
    for seed in (0, 1):
        torch.manual_seed(seed)
        xs, ws = torch.randn(n, c, *hw, device="cuda").to(tdt), (torch.randn(o, c, k, k, device="cuda") / (c * k * k) ** 0.5).to(tdt)
        want = torch.nn.functional.conv2d(xs.double(), ws.double(), stride=stride, padding=pad)
        err = (torch.as_tensor(fn(x=xs, w=ws)).double() - want).abs().max().item() / want.abs().max().item()
        assert err <= (1e-2 if dtype == "bfloat16" else 1e-5), (seed, err)
