"""Rewrite 0a of the contraction layouts (kernel/layout_phases.py, EMBER_CONV_PHASES=1): a strided
window over fewer channels than a chunk read as a stride-1 window over the stride's phases. The
rewritten graphs evaluate like the originals (the reference interpreter, odd sizes, several seeds),
which convs it leaves alone, and on the H100 target, offline: the stems take `wgmma` with wide pixels
and compile for sm_90a; on the GPU (marked cuda) they equal torch."""
import numpy as np
import pytest

import ember as em
from ember import dtypes as dt
from ember import graph as g
from ember.backends.target import get_target
from ember.codegen import cuda as cg
from ember.kernel import layout, layout_phases
from ember.kernel.lower import lower
from ember.reference import evaluate

H100 = get_target("h100")


@pytest.fixture
def phases(monkeypatch):
    monkeypatch.setenv("EMBER_CONV_PHASES", "1")
    hits = []
    split = layout_phases.phase_split

    def counted(n):
        m = split(n)
        if m is not n:
            hits.append(m)
        return m
    monkeypatch.setattr(layout_phases, "phase_split", counted)
    return hits


def _layouts(roots):
    """kernel/lower.py's order: rewrite 0a, then kernel/layout.py's."""
    return layout.contraction_layouts(layout_phases.phase_layouts(roots, H100), H100)


def _conv(rng, dtype, n, c, hw, o, k, stride, pad, weights="const"):
    x = em.input("x", (n, c) + hw, dtype)
    kk = (k, k) if isinstance(k, int) else k
    wa = rng.standard_normal((o, c) + kk).astype(np.float32) / 4
    w = em.tensor(wa.astype(dt.as_dtype(dtype).np)) if weights == "const" else em.input("w", (o, c) + kk, dtype)
    return em.conv2d(x, w, stride=stride, padding=pad).relu(), wa


def _equal(y, wa, rng, dtype, weights):
    roots = [y.node]
    new = _layouts(roots)
    feed = {"x": rng.standard_normal(tuple(s.value for s in next(
        nd for nd in g.toposort(roots) if nd.op == g.INPUT and nd.arg == "x").shape)).astype(dt.as_dtype(dtype).np)}
    if weights == "input":
        feed["w"] = wa.astype(dt.as_dtype(dtype).np)
    want, = evaluate(roots, feed, {})
    got, = evaluate(new, feed, {})
    tol = 0.03 if dtype == "bfloat16" else 1e-5
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=tol,
                               atol=tol * float(np.abs(np.asarray(want, np.float32)).max()))


CASES = [  # (dtype, channels, (h, w), out channels, kernel, stride, padding)
    ("bfloat16", 3, (17, 19), 16, 7, 2, 3),  # ResNet's stem at a small size
    ("float32", 3, (35, 38), 8, 11, 4, 2),  # the seed-000 conv's form
    ("float32", 2, (15, 16), 4, (3, 5), (2, 3), (1, 0)),  # asymmetric strides and windows
    ("bfloat16", 2, (21, 13), 8, 4, 2, 0),  # a window the stride divides (no zero taps)
    ("float32", 3, (9, 9), 5, 3, 3, 1),  # stride as wide as the window
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-k{c[4]}-s{c[5]}" for c in CASES])
@pytest.mark.parametrize("weights", ["const", "input"])
@pytest.mark.parametrize("seed", range(2))
def test_phased_conv_evaluates_like_the_original(phases, monkeypatch, case, weights, seed):
    if seed:  # (the second seed with the channels padded to whole k slices)
        monkeypatch.setenv("EMBER_CONV_PHASES", "slice")
    rng = np.random.default_rng(seed)
    dtype, c, hw, o, k, s, p = case
    y, wa = _conv(rng, dtype, 2, c, hw, o, k, s, p, weights)
    _equal(y, wa, rng, dtype, weights)
    assert len(phases) == 1  # (the rewrite fired)


def test_convs_it_leaves_alone(phases, monkeypatch):
    rng = np.random.default_rng(0)
    for dtype, c, hw, o, k, s, p in [("bfloat16", 3, (17, 17), 16, 3, 1, 1),  # stride 1
                                     ("bfloat16", 16, (17, 17), 16, 3, 2, 1)]:  # 32-byte pixels already
        y, _ = _conv(rng, dtype, 2, c, hw, o, k, s, p)
        _layouts([y.node])
    x = em.input("x", (2, 3, 20, 20), "bfloat16")  # dilated taps: the tap's step is not 1
    w = em.tensor(rng.standard_normal((8, 3, 3, 3)).astype(dt.bfloat16.np))
    _layouts([em.conv2d(x, w, stride=2, padding=2, dilation=2).node])
    assert not phases
    monkeypatch.setenv("EMBER_CONV_PHASES", "0")
    y, _ = _conv(rng, "bfloat16", 2, 3, (17, 19), 16, 7, 2, 3)
    _layouts([y.node])
    assert not phases


@pytest.mark.parametrize("dtype,shape,o,k,s,p,pixel,mode", [("bfloat16", (8, 3, 96, 96), 64, 7, 2, 3, 16, "1"),
                                                            ("float32", (4, 3, 131, 131), 96, 11, 4, 2, 48, "1"),
                                                            ("float32", (4, 3, 131, 131), 96, 11, 4, 2, 64, "slice")])
def test_stems_take_wgmma_over_wide_pixels_and_compile(phases, monkeypatch, dtype, shape, o, k, s, p, pixel, mode):
    """On the H100 target: the conv's input is a channels-last copy of C s^2 channels (padded to a
    chunk, or with EMBER_CONV_PHASES=slice to a 128-byte k slice), its weights [O, kh', kw', C'] with
    kh' = ceil(k / s), and the conv takes `wgmma`."""
    monkeypatch.setenv("EMBER_CONV_PHASES", mode)
    rng = np.random.default_rng(0)
    y, _ = _conv(rng, dtype, shape[0], shape[1], shape[2:], o, k, s, p)
    kq = -(-k // s)
    low = lower([y.node], target=H100)
    ks = [kn for kn, _ in low.kernels if cg.contraction_of(cg.canonical(kn)) is not None]
    assert len(ks) == 1 and cg.default_config(ks[0], H100)["mode"] == "wgmma"
    sizes = [int(getattr(b.size, "value", b.size)) for b in ks[0].buffers if b.role == "in"]
    assert o * kq * kq * pixel in sizes and len(phases) == 1  # the weights [O, kh', kw', C']
    pytest.importorskip("cuda.core")
    from ember.backends.cuda import compile_cuda
    src = cg.render_kernel(ks[0], cg.default_config(ks[0], H100), target=H100)[0]
    assert len(compile_cuda(cg.PRELUDE + "\n" + src, "sm_90a")) > 0


@pytest.mark.cuda
@pytest.mark.parametrize("precision,dtype,mode", [("torch", "bfloat16", "1"), ("torch", "float32", "1"), ("float32", "float32", "1"),
                                                  ("float32", "float32", "slice"), ("torch", "bfloat16", "slice")])
def test_phased_stems_equal_torch_on_the_gpu(monkeypatch, precision, dtype, mode):
    """ResNet's stem and the seed conv's form through em.from_torch with the rewrite on, two seeds."""
    torch = pytest.importorskip("torch")
    from ember.precision import TF32_TOL
    monkeypatch.setenv("EMBER_CONV_PHASES", mode)
    tdt = {"bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    for make, shape in ((lambda: torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False), (4, 3, 67, 61)),
                        (lambda: torch.nn.Conv2d(3, 96, 11, 4, 2), (3, 3, 99, 101))):
        torch.manual_seed(0)
        module = make().cuda().to(tdt)
        fn = None
        for seed in (0, 1):
            torch.manual_seed(seed)
            x = torch.randn(*shape, device="cuda", dtype=tdt)
            fn = fn or em.from_torch(module, (x,), device="cuda", precision=precision)
            got = fn(x).double()
            want = module.double()(x.double())
            module.to(tdt)
            err = (got - want).abs().max().item() / want.abs().max().item()
            tol = 0.02 if dtype == "bfloat16" else (TF32_TOL if precision == "torch" else 1e-5)
            assert err <= tol, (dtype, precision, seed, err)


def test_a_torch_stem_with_batchnorm_and_pool_evaluates_like_the_original(phases):
    """ResNet's stem as torch writes it (conv, BatchNorm, ReLU, max pool) imported in bf16: the graph
    with the phases rewrite evaluates like the original."""
    torch = pytest.importorskip("torch")
    from ember.frontends.importer import export, import_graph
    torch.manual_seed(0)
    stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                               torch.nn.MaxPool2d(3, 2, 1)).eval().to(torch.bfloat16)
    stem[1].running_mean.uniform_(-0.5, 0.5)
    x = torch.randn(2, 3, 29, 27, dtype=torch.bfloat16)
    ig = import_graph(export(stem, (x,)), precision="torch")
    roots = [o.node for o in ig.outputs if hasattr(o, "node")]
    new = _layouts(roots)
    assert len(phases) == 1
    name = next(nd.arg for nd in g.toposort(roots) if nd.op == g.INPUT)
    feed = {name: x.float().numpy().astype(dt.bfloat16.np)}
    want, = evaluate(roots, feed, {})
    got, = evaluate(new, feed, {})
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=0.03, atol=0.03)
