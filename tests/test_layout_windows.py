"""Rewrite 3 of the contraction layouts (kernel/layout_windows.py): a window's constant — a depthwise conv's
weights — stored with the window's innermost output axis (the channels, once rewrite 2 made the activations
channels-last) last. The rewritten graphs equal torch (CPU, layouts forced on); the constant is relaid exactly
where a window reads it (not a GEMM's weight); on the H100 target the depthwise kernel then takes the column
mode's vector lanes; EMBER_WINDOW_CONSTANTS=0 leaves it."""
import pytest

import ember as em
from ember.backends.target import get_target
from ember.codegen import cuda as cg
from ember.kernel import layout_windows
from ember.kernel.lower import lower

torch = pytest.importorskip("torch")
nn = torch.nn


class Inverted(nn.Module):
    """MobileNetV2's block: 1x1 expand, depthwise 3x3 (stride s), 1x1 project."""

    def __init__(self, c=8, e=4, s=1, k=3):
        super().__init__()
        h = c * e
        self.body = nn.Sequential(nn.Conv2d(c, h, 1, bias=False), nn.ReLU6(),
                                  nn.Conv2d(h, h, k, stride=s, padding=k // 2, groups=h, bias=False), nn.ReLU6(),
                                  nn.Conv2d(h, c, 1, bias=False))

    def forward(self, x):
        return x + self.body(x) if self.body[2].stride == (1, 1) else self.body(x)


@pytest.fixture
def relaid(monkeypatch):
    monkeypatch.setenv("EMBER_CONTRACTION_LAYOUTS", "1")
    hits = []
    orig = layout_windows._relaid

    def r(x, order):
        hits.append(tuple(int(d.value) for d in x.shape))
        return orig(x, order)
    monkeypatch.setattr(layout_windows, "_relaid", r)
    return hits


@pytest.mark.parametrize("kw", [{}, {"s": 2}, {"k": 5, "e": 2}])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_depthwise_blocks_equal_torch_with_the_weights_relaid(relaid, kw, dtype):
    torch.manual_seed(3)
    m = Inverted(**kw).eval().to(dtype)
    x = torch.randn(2, 8, 11, 9).to(dtype)
    got = em.from_torch(m, (x,), device="cpu")(x).float()
    want = m.float()(x.float())
    assert (got - want).abs().max().item() <= 0.03 * want.abs().max().item() + 1e-3
    k = m.body[2].kernel_size[0]
    # the depthwise weight [C, 1, k, k], relaid for windows of fewer than MAX_TAPS taps (a 5 x 5 one stays)
    assert any(s[-2:] == (k, k) and s[1] == 1 for s in relaid) == (k * k < layout_windows.MAX_TAPS), relaid


def _depthwise_kernel(flag, monkeypatch):
    monkeypatch.setenv("EMBER_WINDOW_CONSTANTS", flag)
    x = em.input("x", (4, 192, 28, 28))
    w1 = em.tensor(torch.randn(192, 192, 1, 1).numpy())
    wd = em.tensor(torch.randn(192, 1, 3, 3).numpy())
    w3 = em.tensor(torch.randn(32, 192, 1, 1).numpy())
    with em.allow_tf32():  # (the project conv reads the depthwise's output channels-last: rewrite 2)
        y = em.conv2d(em.conv2d(em.conv2d(x, w1).relu(), wd, padding=1, groups=192).relu(), w3)
    low = lower([y.node], target=get_target("h100"))
    k = next(k for k, _ in low.kernels if any(str(b.size) == "1728" for b in k.buffers))  # (the depthwise's weights)
    return cg.default_config(k, get_target("h100"))


def test_the_depthwise_kernel_takes_vector_lanes_by_flag(monkeypatch):
    assert _depthwise_kernel("1", monkeypatch).get("cvec", 1) > 1
    assert _depthwise_kernel("0", monkeypatch).get("cvec", 1) == 1


def test_a_gemm_constant_is_left_alone(relaid):
    x = em.input("x", (64, 96), "bfloat16")
    w = em.tensor(torch.randn(128, 96).numpy()).cast("bfloat16")
    lower([(x @ w.T).node], target=get_target("h100"))
    assert relaid == []
