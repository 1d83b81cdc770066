"""Shared by the PyTorch frontend tests: compare an imported module with eager PyTorch on several
seeds of fresh random inputs (odd shapes, never zeros), with the suite's tolerances (conftest.py:
f32 1e-4 + 1e-4 max|ref|; f16/bf16 1e-2)."""
from __future__ import annotations

import copy

import torch
import torch.nn as nn

import ember as em
from tests.conftest import SEEDS, assert_close


def _cmp(out, ref, what, dtype_name="float32", scale=1.0):
    if isinstance(ref, (tuple, list)):
        assert isinstance(out, (tuple, list)) and len(out) == len(ref), f"{what}: output structure differs"
        for i, (o, r) in enumerate(zip(out, ref)):
            _cmp(o, r, f"{what}[{i}]", dtype_name, scale)
        return
    if isinstance(ref, dict):
        assert set(out) == set(ref)
        for k in ref:
            _cmp(out[k], ref[k], f"{what}[{k}]", dtype_name, scale)
        return
    assert isinstance(out, torch.Tensor), f"{what}: got {type(out).__name__}"
    assert out.dtype == ref.dtype, f"{what}: dtype {out.dtype} != torch's {ref.dtype}"
    assert tuple(out.shape) == tuple(ref.shape), f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    o = out.detach().float().numpy() if out.dtype in (torch.bfloat16, torch.float16) else out.detach().numpy()
    r = ref.detach().float().numpy() if ref.dtype in (torch.bfloat16, torch.float16) else ref.detach().numpy()
    assert_close(o, r, dtype_name, what, scale)


class Fn(nn.Module):
    """A module around a function of tensors (and its own parameters, if any)."""

    def __init__(self, f, **params):
        super().__init__()
        self.f = f
        for k, v in params.items():
            setattr(self, k, v)

    def forward(self, *xs):
        return self.f(self, *xs)


def R(*shape, lo=-2.0, hi=2.0, dtype=torch.float32):
    """Factory of uniform random inputs of a shape (resolved per seed)."""
    return ("rand", shape, lo, hi, dtype)


def P(*shape, lo=0.1, hi=2.0):
    return R(*shape, lo=lo, hi=hi)


def IDX(high, *shape):
    return ("int", shape, 0, high, torch.int64)


def _make(spec, gen):
    kind, shape, lo, hi, dtype = spec
    if kind == "int":
        return torch.randint(lo, hi, shape, generator=gen, dtype=dtype)
    x = torch.rand(shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo
    return x.to(dtype)


def inputs(specs, seed):
    gen = torch.Generator().manual_seed(1000 + seed)
    return tuple(_make(s, gen) for s in specs)


def check(module, specs, seeds=SEEDS, dtype_name="float32", scale=1.0, what="", train=None):
    """Import `module` once (on seed 0's inputs), then compare with eager torch on every seed.
    In training mode a deep copy runs eagerly so both see the same buffer updates."""
    torch.manual_seed(0)
    if train is not None:
        module.train(train)
    eager = copy.deepcopy(module)
    fn = em.from_torch(module, inputs(specs, seeds[0]), device="cpu")
    for s in seeds:
        xs = inputs(specs, s)
        with torch.no_grad():
            ref = eager(*xs)
            out = fn(*xs)
        _cmp(out, ref, f"{what or type(module).__name__} seed {s}", dtype_name, scale)
    for (name, b), (_, b2) in zip(module.named_buffers(), eager.named_buffers()):
        if b.dtype.is_floating_point:
            _cmp(b, b2, f"buffer {name}")
        else:
            assert torch.equal(b, b2), f"buffer {name}: {b} != {b2}"
    return fn
