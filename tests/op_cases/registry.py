"""The records of the op-case registry (``Spec``, ``OpCase``), ``make_inputs``, and the torch-side
helpers several op families share. ``torch`` and ``F`` are None without PyTorch: the Ember side of
every case (and ``make_inputs``) works without it; only the torch oracles need it.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Callable

import ember as em
import numpy as np

try:  # torch is the oracle for tests, never a dependency of Ember itself
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover
    torch = F = None


@dataclass(frozen=True)
class Spec:
    """One input array. kind: "normal" (randn), "positive" (uniform 0.5..2), "unit" (uniform -0.9..0.9),
    "int:LO:HI" (integers LO <= v < HI, in any dtype: an int-valued float tensor is useful for ties and
    exact halves), "bool" (fair coin)."""
    shape: tuple
    dtype: str = "float32"
    kind: str = "normal"


@dataclass(frozen=True)
class OpCase:
    name: str                      # unique, e.g. "softmax_axis1_odd"
    inputs: dict                   # graph inputs by name (weights are inputs too): name -> Spec
    ember: Callable                # (**ember_tensors) -> em.Tensor (or tuple of tensors)
    torch: Callable                # (**torch_tensors) -> torch.Tensor (or tuple)
    grad: bool = True              # False where a gradient makes no sense (argmax, comparisons, int ops)
    atol_scale: float = 1.0        # rarely > 1, with a comment saying why
    upcast: bool = True            # False where the oracle must run in the inputs' own dtypes (casts)
    tags: tuple = field(default=())  # free-form labels ("f16", "conv", …) for selecting subsets


def case_adder(cases: list) -> Callable:
    """The ``_add(name, inputs, ember, torch_fn, **kw)`` of one op-family module: appends an OpCase
    to that module's list (tests/op_cases/__init__.py concatenates the lists in a fixed order)."""
    def _add(name, inputs, ember, torch_fn, **kw) -> None:
        cases.append(OpCase(name, dict(inputs), ember, torch_fn, **kw))
    return _add


def S(*shape, dtype="float32", kind="normal") -> Spec:
    return Spec(tuple(shape), dtype, kind)


def _np_dtype(name: str):
    return em.dtypes.as_dtype(name).np


def make_inputs(case: OpCase, seed: int) -> dict:
    """Fresh random arrays for a case (deterministic in (case.name, seed)); floats are never zero."""
    rng = np.random.default_rng([seed, zlib.crc32(case.name.encode())])
    out = {}
    for name in sorted(case.inputs):
        spec = case.inputs[name]
        shape = tuple(spec.shape)
        k = spec.kind
        if k == "normal":
            a = rng.standard_normal(shape)
            a = np.where(np.abs(a) < 1e-3, 1e-3, a)  # keep every value away from exact zero
        elif k == "positive":
            a = rng.uniform(0.5, 2.0, shape)
        elif k == "unit":
            a = rng.uniform(-0.9, 0.9, shape)
            a = np.where(np.abs(a) < 1e-3, 1e-3, a)
        elif k.startswith("int:"):
            _, lo, hi = k.split(":")
            a = rng.integers(int(lo), int(hi), shape)
        elif k == "bool":
            a = rng.random(shape) < 0.5
        else:
            raise ValueError(f"case {case.name}: unknown input kind {k!r}")
        out[name] = np.asarray(a).astype(_np_dtype(spec.dtype))
    return out


# ================================================================================================
# helpers shared by the torch side

def t_prod(x, axes=None, keepdim=False):
    if axes is None:
        return x.prod()
    axes = sorted((a % x.ndim for a in (axes if isinstance(axes, tuple) else (axes,))), reverse=True)
    for a in axes:
        x = x.prod(a, keepdim=True)
    if not keepdim:
        for a in axes:
            x = x.squeeze(a)
    return x


def t_rotate(x, interleaved):
    d = x.shape[-1]
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([-x2, x1], -1).flatten(-2)
    return torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1)


def t_rope_tables(T, D, base=10000.0, offset=0, dtype=torch.float32 if torch else None):
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    pos = torch.arange(offset, offset + T, dtype=torch.float64)
    ang = torch.outer(pos, inv)
    ang = torch.cat([ang, ang], -1)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def t_mask(m, S_):
    return (m > -1.0) | (torch.arange(S_) == 0)


def e_mask(m, S_):
    return (m > -1.0) | (em.arange(S_) == 0)


# inputs mapped to NaN, +inf and -inf (the special-value cases, prod's and log1p's among them)

def e_special(x):
    return em.where(x > 1.0, math.inf, em.where(x < -1.0, -math.inf, em.where(x.abs() < 0.3, math.nan, x)))


def t_special(x):
    inf = torch.tensor(math.inf, dtype=x.dtype)
    return torch.where(x > 1.0, inf, torch.where(x < -1.0, -inf, torch.where(x.abs() < 0.3, math.nan, x)))
