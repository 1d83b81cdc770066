"""Softmax shifts (ember/autograd/shift.py): which maxima autograd may treat as constants, and the
gradients that result, against PyTorch autograd (ties included: rows whose maximum repeats)."""
from __future__ import annotations

import numpy as np
import pytest

import ember as em
from ember import graph as g
from ember.autograd.shift import softmax_shifts

torch = pytest.importorskip("torch")


def _shifts(*tensors):
    return softmax_shifts(g.toposort([t.node for t in tensors]))


def test_softmax_max_is_a_shift():
    x = em.input("x", (4, 8), "float32")
    (m,) = _shifts(x.softmax(-1))
    assert m.op == g.MAX and m.srcs[0] is x.node


@pytest.mark.parametrize("build", [
    lambda x: x.log_softmax(-1),                                       # log(sum) + m reads m itself
    lambda x: x.softmax(-1) * x.max(-1, keepdim=True),                 # the max also scales the result
    lambda x: (x - x.max(-1, keepdim=True)).exp(),                     # not normalised
    lambda x: (x - x.max(-1, keepdim=True)).exp() / (x - x.max(-1, keepdim=True)).exp().sum(0, keepdim=True),
    lambda x: x.max(-1, keepdim=True),                                 # the max is the output
    lambda x: (x * x.max(-1, keepdim=True)).softmax(-1),               # a shift scaled by x: not constant along the row
])
def test_other_uses_of_max_keep_their_gradient(build):
    x = em.input("x", (4, 8), "float32")
    y = build(x)
    assert not {m for m in _shifts(y) if m.srcs[0] is x.node and m.arg == (1,)}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ties", [False, True])
def test_softmax_gradient_matches_torch(seed, ties):
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((5, 7)).astype(np.float32)
    if ties:  # repeated maxima: the max's own rule would split a (zero) gradient among them
        xs[:, 3] = xs[:, 5] = xs.max(1) + 1.0
    ws = rng.standard_normal((5, 7)).astype(np.float32)
    x, w = em.input("x", (5, 7), "float32"), em.input("w", (5, 7), "float32")
    loss = (x.softmax(-1) * w).sum() + (x.softmax(0) * w * w).sum()
    (gx,) = em.grad(loss, [x])
    got = em.compile([gx])(x=xs, w=ws)[0]
    tx = torch.tensor(xs, requires_grad=True)
    tw = torch.tensor(ws)
    ((tx.softmax(-1) * tw).sum() + (tx.softmax(0) * tw * tw).sum()).backward()
    np.testing.assert_allclose(np.asarray(got), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_softmax_backward_has_no_max_gradient():
    """The comparison that routes a max's gradient (x < max) is gone from softmax's backward."""
    x, w = em.input("x", (4, 8), "float32"), em.input("w", (4, 8), "float32")
    (gx,) = em.grad((x.softmax(-1) * w).sum(), [x])
    assert not any(n.op == g.LT for n in g.toposort([gx.node]))
    (gl,) = em.grad((x.log_softmax(-1) * w).sum(), [x])  # log_softmax keeps it (m is read by the result)
    assert any(n.op == g.LT for n in g.toposort([gl.node]))
