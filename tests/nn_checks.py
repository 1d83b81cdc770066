"""Shared helpers of the ember.nn tests (tests/test_nn*.py): torch modules with non-default weights,
and the load-torch's-state-then-compare check. ``torch`` is None without PyTorch; tests that need it
carry ``needs_torch`` or skip their whole module.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember as em
from ember import graph as g
from ember import nn
from tests.conftest import assert_close

try:  # PyTorch is the oracle, never a dependency of Ember itself
    import torch
except ImportError:  # pragma: no cover
    torch = None
else:
    torch.set_num_threads(1)

needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch (the oracle)")


def randomize(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Non-default values everywhere (norm weights of 1 and biases of 0 would hide mix-ups)."""
    gen = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
        for name, b in module.named_buffers():
            if name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=gen) + 0.5)
            elif name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=gen))
    return module


def _torch_in(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a.astype(np.int64) if a.dtype.kind in "iu" else a)


def compare(em_mod, th_mod, *arrays, shapes=None, what="", **kw):
    """Load torch's state into the Ember module, check the keys agree, run both, compare."""
    res = em_mod.load_state_dict(th_mod.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert list(em_mod.state_dict()) == list(th_mod.state_dict()), what
    names = [f"x{i}" for i in range(len(arrays))]
    ins = [em.input(n, shapes[i] if shapes else a.shape, em.int32 if a.dtype.kind in "iu" else em.float32)
           for i, (n, a) in enumerate(zip(names, arrays))]
    out = em.reference(em_mod(*ins, **kw), **dict(zip(names, arrays)))
    with torch.no_grad():
        ref = th_mod(*[_torch_in(a) for a in arrays], **kw)
    assert_close(out, ref.numpy(), what=what)
    return out


def pair(name: str, *args, **kwargs):
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


def data_names(y) -> list:
    return [n.arg.name for n in g.toposort([y.node]) if n.op == g.DATA]
