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


def test_nested_input_structure_mismatch_names_the_input():
    x, a, b, c = (_rand(2, 3, seed=i) for i in range(4))
    fn = em.from_torch(lambda x, pair: x * pair[0] + pair[1], (x, [a, b]), device="cpu")
    torch.testing.assert_close(fn(x, [b, c]), x * b + c)
    with pytest.raises(TorchImportError, match=r"^from_torch: positional input #1 \(pair\) is a list of 3, the "
                                               r"import was for a list of 2$"):
        fn(x, [a, b, c])
