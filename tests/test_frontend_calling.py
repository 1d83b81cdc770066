"""Calling an imported model: argument mismatches are one-line errors naming the problem, and random
numbers drawn inside `forward` come from torch's generator at call time, bit for bit as eager."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import ember as em  # noqa: E402
from ember.frontends.pytorch import TorchImportError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


class TwoInputs(nn.Module):
    def forward(self, x, y, *, mask=None, scale=None):
        out = x + 2.0 * y
        return out if mask is None else out * mask + scale


def _rand(*shape, seed=0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("call, message", [
    (lambda fn, x, y: fn(x, y, x), r"^from_torch: expected 2 positional inputs \(x, y\), got 3$"),
    (lambda fn, x, y: fn(x), r"^from_torch: expected 2 positional inputs \(x, y\), got 1$"),
    (lambda fn, x, y: fn(x, y, mask=x), r"^from_torch: unexpected keyword argument 'mask' \(the model was "
                                          r"imported with no keyword arguments\)$"),
    (lambda fn, x, y: fn(x, y=y), r"^from_torch: expected 2 positional inputs \(x, y\), got 1; unexpected "
                                  r"keyword argument 'y'"),
])
def test_wrong_positional_or_keyword_arguments_are_one_line_errors(call, message):
    x, y = _rand(3, 5, seed=1), _rand(3, 5, seed=2)
    fn = em.from_torch(TwoInputs(), (x, y), device="cpu")
    with pytest.raises(TorchImportError, match=message) as e:
        call(fn, x, y)
    assert "TreeSpec" not in str(e.value) and "\n" not in str(e.value)


def test_keyword_arguments_in_any_order_missing_or_structured_differently():
    x, y, m, s = (_rand(4, 3, seed=i) for i in range(4))
    fn = em.from_torch(TwoInputs(), (x, y), device="cpu", example_kwargs={"mask": m, "scale": s})
    for seed in range(3):
        x, y, m, s = (_rand(4, 3, seed=10 * seed + i) for i in range(4))
        torch.testing.assert_close(fn(x, y, scale=s, mask=m), TwoInputs()(x, y, mask=m, scale=s))
    with pytest.raises(TorchImportError, match=r"^from_torch: missing keyword argument 'scale'$"):
        fn(x, y, mask=m)
    with pytest.raises(TorchImportError, match=r"^from_torch: keyword argument 'mask' is a list of 1, the import "
                                               r"was for a single value$"):
        fn(x, y, mask=[m], scale=s)


@pytest.mark.parametrize("args, kwargs, problem", [
    (1, None, "missing a required argument: 'y'"),
    (3, None, "too many positional arguments"),
    (2, {"other": 1}, "got an unexpected keyword argument 'other'"),
])
def test_example_inputs_that_do_not_fit_forward_are_one_line_errors(args, kwargs, problem):
    xs = tuple(_rand(3, 5, seed=i) for i in range(args))
    with pytest.raises(TorchImportError) as e:
        em.from_torch(TwoInputs(), xs, device="cpu", example_kwargs=kwargs)
    msg = str(e.value)
    assert msg == f"from_torch: the example inputs do not fit TwoInputs.forward(x, y, *, mask=None, scale=None): {problem}"


def test_nested_input_structure_mismatch_names_the_input():
    x, a, b, c = (_rand(2, 3, seed=i) for i in range(4))
    fn = em.from_torch(lambda x, pair: x * pair[0] + pair[1], (x, [a, b]), device="cpu")
    torch.testing.assert_close(fn(x, [b, c]), x * b + c)
    with pytest.raises(TorchImportError, match=r"^from_torch: positional input #1 \(pair\) is a list of 3, the "
                                               r"import was for a list of 2$"):
        fn(x, [a, b, c])


# ------------------------------------------------------------------------------------------------
# random numbers drawn inside forward

class RandomState(nn.Module):
    """An initial hidden state drawn in forward (as some RNN code does), used by a GRU cell."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(5, 6)

    def forward(self, x):
        h0 = torch.randn(x.shape[0], 6)
        noise = torch.rand_like(x)
        idx = torch.randint(0, 7, (x.shape[0], 3))
        coin = x.bernoulli(0.25)  # a fixed probability (bernoulli.p)
        return h0, x + noise, idx, coin, self.cell(x, h0)


def _same_draws_as_eager(model, fn, *args, seeds=(0, 1, 7), device="cpu"):
    """Per seed: eager and compiled outputs, and the generator's next draw after each (equal when the
    compiled call consumed torch's generator exactly as eager did)."""
    for seed in seeds:
        torch.manual_seed(seed)
        want = model(*args)
        want_next = torch.rand(3, device=device)
        torch.manual_seed(seed)
        got = fn(*args)
        got_next = torch.rand(3, device=device)
        assert torch.equal(want_next, got_next), f"seed {seed}: the generator state after the call differs"
        yield seed, want, got


@torch.no_grad()
def test_randn_rand_randint_bernoulli_in_forward_match_eager_bit_for_bit():
    model = RandomState()
    x = _rand(4, 5, seed=3)
    fn = em.from_torch(model, (x,), device="cpu")
    for seed, want, got in _same_draws_as_eager(model, fn, x):
        for i in range(4):  # the draws themselves, and a single add of one: exact
            assert got[i].dtype == want[i].dtype and torch.equal(got[i], want[i]), f"seed {seed}, output {i}"
        torch.testing.assert_close(got[4], want[4], rtol=1e-5, atol=1e-6)  # the GRU cell on h0: rounding only
    assert len({fn(x)[0].sum().item() for _ in range(3)}) == 3  # fresh numbers on every call


@torch.no_grad()
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_training_dropout_matches_eager_bit_for_bit(p):
    model = nn.Sequential(nn.Linear(7, 9), nn.Dropout(p)).train()
    x = _rand(5, 7, seed=4)
    fn = em.from_torch(model, (x,), device="cpu")
    for seed, want, got in _same_draws_as_eager(model, fn, x):
        kept = want != 0
        assert torch.equal(got != 0, kept), f"seed {seed}: a different dropout mask"
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)  # (the Linear: rounding only)
    drop = nn.Dropout(p).train()
    fn = em.from_torch(drop, (x,), device="cpu")
    for seed, want, got in _same_draws_as_eager(drop, fn, x):
        assert torch.equal(got, want), f"seed {seed}: dropout(x) differs from eager"


@torch.no_grad()
def test_feature_and_alpha_dropout_in_training_mode_match_eager():
    x = _rand(2, 3, 4, 5, seed=5)
    for layer in (nn.Dropout2d(0.4), nn.Dropout1d(0.3), nn.AlphaDropout(0.2), nn.FeatureAlphaDropout(0.3)):
        layer.train()
        inp = x.flatten(2) if isinstance(layer, nn.Dropout1d) else x
        fn = em.from_torch(layer, (inp,), device="cpu")
        for seed, want, got in _same_draws_as_eager(layer, fn, inp):
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, msg=f"{type(layer).__name__} seed {seed}")


def test_an_input_the_outputs_do_not_use_is_checked_not_fed():
    x, y = _rand(4, 3, seed=1), _rand(2, seed=2)
    fn = em.from_torch(lambda x, y: x * 2.0, (x, y), device="cpu")
    torch.testing.assert_close(fn(x, y), x * 2.0)
    with pytest.raises(TorchImportError, match=r"shape \(3,\).*\(2,\)"):
        fn(x, _rand(3))


@torch.no_grad()
def test_torch_compile_draws_like_eager():
    class M(nn.Module):
        def forward(self, x):
            h0 = torch.randn(x.shape)
            return nn.functional.dropout(x, 0.35, training=True), x + h0
    model = M()
    compiled = torch.compile(model, backend="ember", options={"device": "cpu"})
    x = _rand(6, 5, seed=8)
    for seed, want, got in _same_draws_as_eager(model, compiled, x):
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), f"seed {seed}"


def test_random_ops_that_cannot_be_drawn_are_clear_errors():
    from ember.frontends.pytorch import UnsupportedOpError
    g = torch.Generator().manual_seed(0)
    with pytest.raises(UnsupportedOpError, match=r"^aten\.randn\.generator with an explicit torch\.Generator"):
        em.from_torch(lambda x: x + torch.randn(x.shape, generator=g), (_rand(3),), device="cpu")
    with pytest.raises(UnsupportedOpError, match="random numbers"):
        em.from_torch(lambda x: torch.normal(x, 1.0), (_rand(3),), device="cpu")
    with pytest.raises(UnsupportedOpError, match="bernoulli.default.*random numbers"):
        em.from_torch(lambda x: torch.bernoulli(x), (_rand(3),), device="cpu")


@torch.no_grad()
def test_native_dropout_called_directly_replays_native_dropout():
    """torch.native_dropout's mask and output, both exact (the draw follows the function called)."""
    def f(x):
        return torch.native_dropout(x, 0.3, True)
    x = _rand(4, 5, seed=9) + 0.5
    fn = em.from_torch(f, (x,), device="cpu")
    for seed, want, got in _same_draws_as_eager(f, fn, x):
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), f"seed {seed}"


@pytest.mark.cuda
@torch.no_grad()
def test_cuda_draws_match_eager():
    """On CUDA, eager dropout runs the fused Philox kernel (native_dropout): replayed on ones it gives
    mask * scale, and x * (mask * scale) equals the kernel's (x * mask) * scale exactly."""
    class M(nn.Module):
        def forward(self, x):
            h = torch.randn(x.shape, device=x.device)
            return nn.functional.dropout(x, 0.3, training=True), x + h, h, torch.rand_like(x)
    model = M()
    x = _rand(64, 33, seed=10).cuda()
    fn = em.from_torch(model, (x,), device="cuda")
    for seed, want, got in _same_draws_as_eager(model, fn, x, device="cuda"):
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.is_cuda and torch.equal(g, w), f"seed {seed}, output {i}"
