"""The registry of op cases: every high-level op of the Tensor API, as an Ember function and the
equivalent PyTorch function over the same named inputs.

Later stages reuse this registry (the compiled CPU and CUDA backends, the autograd gradient tests),
so a case says only *what* to compute; the test files decide how to check it.

* Shapes are odd on purpose (1, primes 3/5/7/13, non-multiples of 8 and 32) so tiling and
  vectorisation bugs cannot hide behind friendly sizes.
* Weights are graph inputs too (``w``, ``b``…), so gradients can be taken with respect to them.
* ``make_inputs(case, seed)`` gives fresh random arrays, never zeros; the same (case, seed) always
  gives the same arrays.
* Torch functions receive tensors of the spec's dtype, or float64 where a test upcasts floats for a
  fairer oracle (``OpCase.upcast``); integer inputs stay int32 (call ``.long()`` where torch wants it).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import ember as em
from ember.ops import conv as C

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


CASES: list = []


def _add(name, inputs, ember, torch_fn, **kw) -> None:
    CASES.append(OpCase(name, dict(inputs), ember, torch_fn, **kw))


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

def _t_prod(x, axes=None, keepdim=False):
    if axes is None:
        return x.prod()
    axes = sorted((a % x.ndim for a in (axes if isinstance(axes, tuple) else (axes,))), reverse=True)
    for a in axes:
        x = x.prod(a, keepdim=True)
    if not keepdim:
        for a in axes:
            x = x.squeeze(a)
    return x


def _t_rotate(x, interleaved):
    d = x.shape[-1]
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([-x2, x1], -1).flatten(-2)
    return torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1)


def _t_rope_tables(T, D, base=10000.0, offset=0, dtype=torch.float32 if torch else None):
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    pos = torch.arange(offset, offset + T, dtype=torch.float64)
    ang = torch.outer(pos, inv)
    ang = torch.cat([ang, ang], -1)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def _t_mask(m, S_):
    return (m > -1.0) | (torch.arange(S_) == 0)


def _e_mask(m, S_):
    return (m > -1.0) | (em.arange(S_) == 0)


# ================================================================================================
# elementwise arithmetic (tensor/tensor with broadcasting, scalars on either side)

_add("add_bcast", {"a": S(3, 1, 5), "b": S(7, 1)}, lambda a, b: a + b, lambda a, b: a + b)
_add("add_scalar", {"a": S(5, 13)}, lambda a: a + 2.5, lambda a: a + 2.5)
_add("radd_scalar", {"a": S(13,)}, lambda a: 2.5 + a, lambda a: 2.5 + a)
_add("sub_bcast", {"a": S(13,), "b": S(5, 13)}, lambda a, b: a - b, lambda a, b: a - b)
_add("rsub_scalar", {"a": S(7, 3)}, lambda a: 1.5 - a, lambda a: 1.5 - a)
_add("sub_scalar_int", {"a": S(7, 3)}, lambda a: a - 3, lambda a: a - 3)
_add("mul_bcast", {"a": S(1, 7), "b": S(5, 1)}, lambda a, b: a * b, lambda a, b: a * b)
_add("mul_scalar", {"a": S(3, 5, 7)}, lambda a: a * -1.75, lambda a: a * -1.75)
_add("rmul_scalar_int", {"a": S(3, 5, 7)}, lambda a: 3 * a, lambda a: 3 * a)
_add("div_tt", {"a": S(5, 7), "b": S(5, 7, kind="positive")}, lambda a, b: a / b, lambda a, b: a / b)
_add("div_bcast_neg", {"a": S(5, 7), "b": S(7, kind="positive")}, lambda a, b: a / -b, lambda a, b: a / -b)
_add("div_scalar", {"a": S(13, 3)}, lambda a: a / 3.0, lambda a: a / 3.0)
_add("rdiv_scalar", {"b": S(13, 3, kind="positive")}, lambda b: 2.0 / b, lambda b: 2.0 / b)
_add("neg", {"a": S(1, 13)}, lambda a: -a, lambda a: -a)
_add("add_int_int", {"a": S(5, 7, dtype="int32", kind="int:-50:50"), "b": S(7, dtype="int32", kind="int:-50:50")},
     lambda a, b: a + b * 3 - 1, lambda a, b: a + b * 3 - 1, grad=False)
_add("int_plus_float_scalar", {"a": S(5, 7, dtype="int32", kind="int:-50:50")},
     lambda a: a + 1.5, lambda a: a + 1.5, grad=False)
_add("int_times_float_tensor", {"a": S(5, 7, dtype="int32", kind="int:-9:9"), "b": S(7)},
     lambda a, b: a * b, lambda a, b: a * b)
_add("int_div_int", {"a": S(3, 5, dtype="int32", kind="int:-20:20"), "b": S(3, 5, dtype="int32", kind="int:1:7")},
     lambda a, b: a / b, lambda a, b: a / b, grad=False)
_add("int_neg", {"a": S(11, dtype="int32", kind="int:-20:20")}, lambda a: -a, lambda a: -a, grad=False)

# ------------------------------------------------------------------------------------------------
# comparisons (bool results)

_cmp = {"lt": (lambda a, b: a < b), "le": (lambda a, b: a <= b), "gt": (lambda a, b: a > b),
        "ge": (lambda a, b: a >= b), "eq": (lambda a, b: a == b), "ne": (lambda a, b: a != b)}
for _n, _f in _cmp.items():
    # int-valued floats so that == and the boundary of <= are hit often
    _add(f"cmp_{_n}_bcast", {"a": S(5, 7, kind="int:-2:3"), "b": S(7, kind="int:-2:3")}, _f, _f, grad=False)
    _add(f"cmp_{_n}_scalar", {"a": S(3, 13, kind="int:-2:3")}, lambda a, _f=_f: _f(a, 1.0),
         lambda a, _f=_f: _f(a, 1.0), grad=False)
_add("cmp_lt_rscalar", {"a": S(3, 13)}, lambda a: 0.25 < a, lambda a: 0.25 < a, grad=False)
_add("cmp_eq_int", {"a": S(5, 7, dtype="int32", kind="int:0:3"), "b": S(5, 1, dtype="int32", kind="int:0:3")},
     lambda a, b: a == b, lambda a, b: a == b, grad=False)
_add("logical_ops", {"a": S(5, 7, dtype="bool", kind="bool"), "b": S(7, dtype="bool", kind="bool")},
     lambda a, b: (a & b, a | b, a ^ b, ~a), lambda a, b: (a & b, a | b, a ^ b, ~a), grad=False)

# ------------------------------------------------------------------------------------------------
# unary math and activations

_add("exp", {"x": S(5, 13)}, lambda x: x.exp(), lambda x: x.exp())
# |x| < 0.9 keeps exp(80 x) below float32's overflow (e^88) for every seed
_add("exp_large", {"x": S(7, 3, kind="unit")}, lambda x: (x * 80).exp(), lambda x: (x * 80).exp())
_add("log", {"x": S(5, 13, kind="positive")}, lambda x: x.log(), lambda x: x.log())
_add("sqrt", {"x": S(5, 13, kind="positive")}, lambda x: x.sqrt(), lambda x: x.sqrt())
_add("rsqrt", {"x": S(5, 13, kind="positive")}, lambda x: x.rsqrt(), lambda x: x.rsqrt())
_add("sqrt_negative_nan", {"x": S(5, 13)}, lambda x: x.sqrt(), lambda x: x.sqrt(), grad=False)
_add("abs", {"x": S(3, 5, 7)}, lambda x: x.abs(), lambda x: x.abs())
_add("relu", {"x": S(3, 5, 7)}, lambda x: x.relu(), lambda x: x.relu())
_add("leaky_relu", {"x": S(3, 5, 7)}, lambda x: em.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2))
_add("leaky_relu_default", {"x": S(13,)}, lambda x: x.leaky_relu(), lambda x: F.leaky_relu(x))
_add("sigmoid", {"x": S(5, 13)}, lambda x: (x * 6).sigmoid(), lambda x: (x * 6).sigmoid())
_add("tanh", {"x": S(5, 13)}, lambda x: (x * 4).tanh(), lambda x: (x * 4).tanh())
_add("tanh_large", {"x": S(7,)}, lambda x: (x * 100).tanh(), lambda x: (x * 100).tanh())
_add("gelu_erf", {"x": S(5, 13)}, lambda x: (x * 3).gelu(), lambda x: F.gelu(x * 3))
_add("gelu_tanh", {"x": S(5, 13)}, lambda x: em.gelu(x * 3, approximate="tanh"),
     lambda x: F.gelu(x * 3, approximate="tanh"))
_add("silu", {"x": S(5, 13)}, lambda x: (x * 3).silu(), lambda x: F.silu(x * 3))
_add("softplus", {"x": S(5, 13)}, lambda x: (x * 3).softplus(), lambda x: F.softplus(x * 3))
_add("softplus_beta_threshold", {"x": S(5, 13)}, lambda x: em.softplus(x * 10, beta=2.0, threshold=7.0),
     lambda x: F.softplus(x * 10, beta=2.0, threshold=7.0))
_add("elu", {"x": S(5, 13)}, lambda x: em.elu(x * 2, alpha=0.7), lambda x: F.elu(x * 2, alpha=0.7))
_add("hardtanh", {"x": S(5, 13)}, lambda x: em.hardtanh(x, -0.5, 0.8), lambda x: F.hardtanh(x, -0.5, 0.8))
_add("clamp_both", {"x": S(5, 13)}, lambda x: x.clamp(-0.3, 0.6), lambda x: x.clamp(-0.3, 0.6))
_add("clamp_min", {"x": S(5, 13)}, lambda x: x.clamp(min=0.1), lambda x: x.clamp(min=0.1))
_add("clamp_max", {"x": S(5, 13)}, lambda x: x.clamp(max=-0.1), lambda x: x.clamp(max=-0.1))
_add("clamp_tensor_bounds", {"x": S(5, 13), "lo": S(13,), "hi": S(5, 1)},
     lambda x, lo, hi: x.clamp(lo, hi), lambda x, lo, hi: torch.clamp(x, lo, hi))
_add("maximum_bcast", {"a": S(5, 1, 7), "b": S(3, 1)}, lambda a, b: a.maximum(b), lambda a, b: torch.maximum(a, b))
_add("minimum_bcast", {"a": S(5, 1, 7), "b": S(3, 1)}, lambda a, b: a.minimum(b), lambda a, b: torch.minimum(a, b))
_add("maximum_int", {"a": S(13, dtype="int32", kind="int:-9:9"), "b": S(13, dtype="int32", kind="int:-9:9")},
     lambda a, b: a.maximum(b), lambda a, b: torch.maximum(a, b), grad=False)
_add("where_bcast", {"c": S(5, 1, dtype="bool", kind="bool"), "a": S(5, 7), "b": S(7)},
     lambda c, a, b: em.where(c, a, b), lambda c, a, b: torch.where(c, a, b))
_add("where_scalar", {"a": S(5, 7)}, lambda a: em.where(a > 0, a, -1.5), lambda a: torch.where(a > 0, a, -1.5))
_add("where_scalar_first", {"a": S(5, 7)}, lambda a: em.where(a > 0, 2.0, a), lambda a: torch.where(a > 0, 2.0, a))

# pow: exact integer / half-integer paths and the general exp2(e·log2|b|) path
_add("pow_int2", {"x": S(5, 7)}, lambda x: x ** 2, lambda x: x ** 2)
_add("pow_int3", {"x": S(5, 7)}, lambda x: x ** 3, lambda x: x ** 3)
_add("pow_int_neg2", {"x": S(5, 7, kind="positive")}, lambda x: x ** -2, lambda x: x ** -2)
_add("pow_int_neg3_negbase", {"x": S(5, 7)}, lambda x: (x + 3.0 * x.sign()) ** -3,
     lambda x: (x + 3.0 * x.sign()) ** -3)
_add("pow_half", {"x": S(5, 7, kind="positive")}, lambda x: x ** 0.5, lambda x: x ** 0.5)
_add("pow_neg_half", {"x": S(5, 7, kind="positive")}, lambda x: x ** -0.5, lambda x: x ** -0.5)
_add("pow_1p5", {"x": S(5, 7, kind="positive")}, lambda x: x ** 1.5, lambda x: x ** 1.5)
_add("pow_general_scalar", {"x": S(5, 7, kind="positive")}, lambda x: x ** 2.7, lambda x: x ** 2.7)
_add("pow_general_negbase_nan", {"x": S(5, 7)}, lambda x: x ** 2.7, lambda x: x ** 2.7, grad=False)
_add("pow_tensor_exp", {"x": S(5, 7, kind="positive"), "e": S(7)}, lambda x, e: x ** e, lambda x, e: x ** e)
# grad=False: d/de of (negative base)^e is log of a negative number (NaN)
_add("pow_negbase_int_tensor_exp", {"x": S(5, 7), "e": S(5, 7, kind="int:-3:4")},
     lambda x, e: em.pow(x, e), lambda x, e: torch.pow(x, e), grad=False)
_add("rpow_scalar", {"x": S(5, 7)}, lambda x: 2.0 ** x, lambda x: 2.0 ** x)
# tag "deep_dag": 31 chained squarings (x = x * x), a deeply shared DAG that any stage printing or
# hashing expressions as trees would expand 2^31-fold
_add("pow_int_int_tensors", {"b": S(13, dtype="int32", kind="int:-4:5"), "e": S(13, dtype="int32", kind="int:-2:9")},
     lambda b, e: (b ** e, 3 ** e.abs(), b ** 2), lambda b, e: (b ** e, 3 ** e.abs(), b ** 2), grad=False,
     tags=("deep_dag",))
_add("pow_int_tensor", {"x": S(13, dtype="int32", kind="int:-5:6")}, lambda x: x ** 3, lambda x: x ** 3, grad=False)

# rounding family and remainders (exact halves for round-half-to-even; ints as floats for ties)
_add("floor", {"x": S(5, 13)}, lambda x: (x * 3).floor(), lambda x: (x * 3).floor(), grad=False)
_add("ceil", {"x": S(5, 13)}, lambda x: (x * 3).ceil(), lambda x: (x * 3).ceil(), grad=False)
_add("trunc", {"x": S(5, 13)}, lambda x: (x * 3).trunc(), lambda x: (x * 3).trunc(), grad=False)
_add("round", {"x": S(5, 13)}, lambda x: (x * 3).round(), lambda x: (x * 3).round(), grad=False)
_add("round_halves", {"x": S(5, 13, kind="int:-9:10")}, lambda x: (x * 0.5).round(),
     lambda x: (x * 0.5).round(), grad=False)
_add("floor_int_valued", {"x": S(5, 13, kind="int:-9:10")}, lambda x: (x * 0.5).floor() + x.ceil(),
     lambda x: (x * 0.5).floor() + x.ceil(), grad=False)
_add("fmod_tt", {"a": S(5, 13), "b": S(13)}, lambda a, b: (a * 5).fmod(b), lambda a, b: torch.fmod(a * 5, b), grad=False)
_add("remainder_tt", {"a": S(5, 13), "b": S(13)}, lambda a, b: (a * 5) % b, lambda a, b: (a * 5) % b, grad=False)
_add("fmod_scalar_neg", {"a": S(5, 13)}, lambda a: (a * 5).fmod(-1.3), lambda a: torch.fmod(a * 5, -1.3), grad=False)
_add("remainder_scalar", {"a": S(5, 13)}, lambda a: (a * 5) % 1.5, lambda a: (a * 5) % 1.5, grad=False)
_add("rremainder_scalar", {"a": S(5, 13, kind="positive")}, lambda a: 5.0 % a, lambda a: 5.0 % a, grad=False)
_add("remainder_int", {"a": S(5, 13, dtype="int32", kind="int:-20:20"), "b": S(13, dtype="int32", kind="int:1:6")},
     lambda a, b: (a % b, a % -b, a.fmod(b), a.fmod(-b)),
     lambda a, b: (a % b, a % -b, torch.fmod(a, b), torch.fmod(a, -b)), grad=False)
_add("floordiv_tt", {"a": S(5, 13), "b": S(13, kind="positive")}, lambda a, b: ((a * 5) // b, (a * 5) // -b),
     lambda a, b: ((a * 5) // b, (a * 5) // -b), grad=False)
# exact integer quotients: a reciprocal-multiply could land an ulp below and floor to one less
_add("floordiv_exact", {"a": S(5, 13, kind="int:-9:10"), "b": S(13, kind="int:1:8")},
     lambda a, b: ((a * b) // b, (a * 7) // 7.0, 1.0 // (b * 0.25)), lambda a, b: ((a * b) // b, (a * 7) // 7.0, 1.0 // (b * 0.25)),
     grad=False)
_add("floordiv_int", {"a": S(5, 13, dtype="int32", kind="int:-40:40"), "b": S(13, dtype="int32", kind="int:1:6")},
     lambda a, b: (a // b, a // -b, a // 3, 100 // b, (a * b) // b),
     lambda a, b: (a // b, a // -b, a // 3, 100 // b, (a * b) // b), grad=False)

# ================================================================================================
# reductions over any axes, with keepdim and negative axes

_RED_AXES = [("all", None, False), ("ax1", 1, False), ("axneg1_keep", -1, True), ("ax02", (0, 2), False),
             ("axneg13_keep", (-1, -3), True)]
for _tag, _ax, _kd in _RED_AXES:
    _tax = _ax  # torch takes the same axes
    if _ax is None:
        _add(f"sum_{_tag}", {"x": S(3, 5, 7)}, lambda x: x.sum(), lambda x: x.sum())
        _add(f"mean_{_tag}", {"x": S(3, 5, 7)}, lambda x: x.mean(), lambda x: x.mean())
        _add(f"max_{_tag}", {"x": S(3, 5, 7)}, lambda x: x.max(), lambda x: x.amax())
        _add(f"min_{_tag}", {"x": S(3, 5, 7)}, lambda x: x.min(), lambda x: x.amin())
        _add(f"var_{_tag}", {"x": S(3, 5, 7)}, lambda x: x.var(), lambda x: x.var())
        _add(f"std_{_tag}", {"x": S(3, 5, 7)}, lambda x: x.std(), lambda x: x.std())
        _add(f"prod_{_tag}", {"x": S(2, 3, 5, kind="unit")}, lambda x: x.prod() * 1e6, lambda x: x.prod() * 1e6)
        _add(f"logsumexp_{_tag}", {"x": S(3, 5, 7)}, lambda x: x.logsumexp(), lambda x: x.logsumexp(dim=(0, 1, 2)))
        continue
    _add(f"sum_{_tag}", {"x": S(3, 5, 7)}, lambda x, a=_ax, k=_kd: x.sum(a, keepdim=k),
         lambda x, a=_ax, k=_kd: x.sum(a, keepdim=k))
    _add(f"mean_{_tag}", {"x": S(3, 5, 7)}, lambda x, a=_ax, k=_kd: x.mean(a, keepdim=k),
         lambda x, a=_ax, k=_kd: x.mean(a, keepdim=k))
    _add(f"max_{_tag}", {"x": S(3, 5, 7)}, lambda x, a=_ax, k=_kd: x.max(a, keepdim=k),
         lambda x, a=_ax, k=_kd: x.amax(a, keepdim=k))
    _add(f"min_{_tag}", {"x": S(3, 5, 7)}, lambda x, a=_ax, k=_kd: x.min(a, keepdim=k),
         lambda x, a=_ax, k=_kd: x.amin(a, keepdim=k))
    _add(f"var_{_tag}", {"x": S(3, 5, 7)}, lambda x, a=_ax, k=_kd: x.var(a, keepdim=k),
         lambda x, a=_ax, k=_kd: x.var(a, keepdim=k))
    _add(f"std_{_tag}", {"x": S(3, 5, 7)}, lambda x, a=_ax, k=_kd: x.std(a, keepdim=k),
         lambda x, a=_ax, k=_kd: x.std(a, keepdim=k))
    _add(f"prod_{_tag}", {"x": S(3, 5, 7, kind="unit")}, lambda x, a=_ax, k=_kd: x.prod(a, keepdim=k),
         lambda x, a=_ax, k=_kd: _t_prod(x, a, k))
    _add(f"logsumexp_{_tag}", {"x": S(3, 5, 7)}, lambda x, a=_ax, k=_kd: x.logsumexp(a, keepdim=k),
         lambda x, a=_ax, k=_kd: x.logsumexp(a, keepdim=k))

_add("var_std_torch_positional", {"x": S(4, 13)}, lambda x: (x.var(1, False), x.std(0, True, True), x.var(1, False, True)),
     lambda x: (x.var(1, False), x.std(0, True, True), x.var(1, False, True)))
_add("var_correction0", {"x": S(4, 13)}, lambda x: x.var(1, correction=0), lambda x: x.var(1, correction=0))
_add("std_unbiased_false_keep", {"x": S(4, 13)}, lambda x: x.std(0, keepdim=True, unbiased=False),
     lambda x: x.std(0, keepdim=True, unbiased=False))
_add("sum_dim_kw_size1", {"x": S(3, 1, 5)}, lambda x: x.sum(dim=1), lambda x: x.sum(dim=1))
_add("prod_with_zeros_and_signs", {"x": S(5, 7, kind="int:-2:3")}, lambda x: x.prod(1), lambda x: x.prod(1),
     grad=False)
_add("logsumexp_large", {"x": S(5, 7)}, lambda x: (x * 200).logsumexp(1), lambda x: (x * 200).logsumexp(1))
_add("prod_int_exact", {"x": S(3, 13, dtype="int32", kind="int:-3:4")}, lambda x: (x.prod(1), x.prod(0)),
     lambda x: (x.prod(1), x.prod(0)), grad=False)
_add("prod_special_values", {"x": S(7, 5)},
     lambda x: _e_special(x * 1.5).prod(1), lambda x: _t_special(x * 1.5).prod(1), grad=False)
_add("prod_zero_times_inf", {"x": S(4, 3)},
     lambda x: em.where(x > 0, math.inf, 0.0).prod(0), lambda x: torch.where(x > 0, math.inf, 0.0).prod(0), grad=False)
_add("prod_f16", {"x": S(3, 13, dtype="float16", kind="positive")}, lambda x: x.prod(1), lambda x: x.prod(1),
     tags=("f16",))
_add("promotion_zero_dim", {"a": S(5, 7, dtype="float16"), "s": S(), "i": S(7, dtype="int32", kind="int:-5:5"),
                            "h": S(dtype="float16")},
     lambda a, s, i, h: (a * s, a + s.exp(), i + h, em.where(a > 0, a, s), a.maximum(s)),
     lambda a, s, i, h: (a * s, a + s.exp(), i + h, torch.where(a > 0, a, s), torch.maximum(a, s)))
_add("sum_int", {"x": S(5, 7, dtype="int32", kind="int:-100:100")}, lambda x: x.sum(0), lambda x: x.sum(0),
     grad=False)
_add("sum_bool", {"x": S(5, 7, dtype="bool", kind="bool")}, lambda x: x.sum(1), lambda x: x.sum(1), grad=False)
_add("max_int", {"x": S(5, 7, dtype="int32", kind="int:-100:100")}, lambda x: (x.max(1), x.min(0)),
     lambda x: (x.amax(1), x.amin(0)), grad=False)
_add("all_any", {"x": S(5, 3, dtype="bool", kind="bool")}, lambda x: (x.all(1), x.any(0), x.all(), x.any()),
     lambda x: (x.all(1), x.any(0), x.all(), x.any()), grad=False)
for _n, _ax, _kd in [("all", None, False), ("ax0", 0, False), ("axneg1_keep", -1, True), ("ax1", 1, False)]:
    _add(f"argmax_{_n}", {"x": S(3, 5, 7)}, lambda x, a=_ax, k=_kd: x.argmax(a, keepdim=k),
         lambda x, a=_ax, k=_kd: x.argmax(a, keepdim=k), grad=False)
    _add(f"argmin_{_n}", {"x": S(3, 5, 7)}, lambda x, a=_ax, k=_kd: x.argmin(a, keepdim=k),
         lambda x, a=_ax, k=_kd: x.argmin(a, keepdim=k), grad=False)
_add("argmax_ties_first", {"x": S(7, 13, kind="int:0:3")}, lambda x: x.argmax(1), lambda x: x.argmax(1), grad=False)
_add("argmin_ties_first", {"x": S(13, 7, kind="int:0:3")}, lambda x: x.argmin(0), lambda x: x.argmin(0), grad=False)
_add("argmax_int", {"x": S(13, 7, dtype="int32", kind="int:0:4")}, lambda x: x.argmax(-1), lambda x: x.argmax(-1),
     grad=False)

# softmax family and cumsum
_add("softmax_axis1_odd", {"x": S(3, 13, 5)}, lambda x: x.softmax(1), lambda x: x.softmax(1))
_add("softmax_last", {"x": S(7, 33)}, lambda x: (x * 4).softmax(-1), lambda x: (x * 4).softmax(-1))
_add("softmax_axis0_large", {"x": S(5, 3)}, lambda x: (x * 300).softmax(0), lambda x: (x * 300).softmax(0))
_add("softmax_size1", {"x": S(5, 1)}, lambda x: x.softmax(-1), lambda x: x.softmax(-1))
_add("log_softmax_last", {"x": S(7, 13)}, lambda x: x.log_softmax(-1), lambda x: x.log_softmax(-1))
_add("log_softmax_axis1_large", {"x": S(3, 5, 7)}, lambda x: (x * 300).log_softmax(1),
     lambda x: (x * 300).log_softmax(1))
_add("cumsum_axis0", {"x": S(7, 5)}, lambda x: x.cumsum(0), lambda x: x.cumsum(0))
_add("cumsum_axisneg1", {"x": S(3, 5, 13)}, lambda x: x.cumsum(-1), lambda x: x.cumsum(-1))
_add("cumsum_middle", {"x": S(3, 5, 7)}, lambda x: x.cumsum(dim=1), lambda x: x.cumsum(dim=1))
_add("cumsum_int", {"x": S(13, dtype="int32", kind="int:-9:9")}, lambda x: x.cumsum(0), lambda x: x.cumsum(0),
     grad=False)
# longer than ops.reduce.CUMSUM_BLOCK: the blocked scan (ragged last block, two and three levels)
_add("cumsum_blocked_ragged", {"x": S(3, 1111)}, lambda x: x.cumsum(-1), lambda x: x.cumsum(-1))
_add("cumsum_blocked_middle", {"x": S(4, 100, 3)}, lambda x: x.cumsum(1), lambda x: x.cumsum(1))
_add("cumsum_blocked_exact", {"x": S(2, 64)}, lambda x: x.cumsum(1), lambda x: x.cumsum(1))
_add("cumsum_blocked_three_levels", {"x": S(33 * 32 + 5)}, lambda x: x.cumsum(0), lambda x: x.cumsum(0))
_add("cumsum_blocked_int", {"x": S(2, 1057, dtype="int32", kind="int:-9:9")}, lambda x: x.cumsum(1),
     lambda x: x.cumsum(1), grad=False)

# ================================================================================================
# contractions

_add("matmul_1d_1d", {"a": S(13), "b": S(13)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_1d_2d", {"a": S(7), "b": S(7, 5)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d_1d", {"a": S(5, 7), "b": S(7)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d", {"a": S(5, 7), "b": S(7, 3)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d_k1", {"a": S(5, 1), "b": S(1, 3)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d_37", {"a": S(13, 37), "b": S(37, 11)}, lambda a, b: a.matmul(b), lambda a, b: a.matmul(b))
_add("matmul_batched", {"a": S(3, 5, 7), "b": S(3, 7, 2)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_bcast_batch", {"a": S(2, 1, 5, 7), "b": S(3, 7, 4)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_2d_batched", {"a": S(5, 7), "b": S(3, 7, 2)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_batched_1d", {"a": S(3, 5, 7), "b": S(7)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("matmul_1d_batched", {"a": S(5), "b": S(3, 5, 7)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("bmm", {"a": S(3, 5, 7), "b": S(3, 7, 2)}, lambda a, b: em.bmm(a, b), lambda a, b: torch.bmm(a, b))
_add("linear_bias", {"x": S(5, 7), "w": S(3, 7), "b": S(3)}, lambda x, w, b: em.linear(x, w, b),
     lambda x, w, b: F.linear(x, w, b))
_add("linear_nobias_3d", {"x": S(2, 5, 13), "w": S(6, 13)}, lambda x, w: em.linear(x, w), lambda x, w: F.linear(x, w))
_add("einsum_ij_jk", {"a": S(5, 7), "b": S(7, 3)}, lambda a, b: em.einsum("ij,jk->ik", a, b),
     lambda a, b: torch.einsum("ij,jk->ik", a, b))
_add("einsum_batched", {"a": S(2, 5, 7), "b": S(2, 7, 3)}, lambda a, b: em.einsum("bij,bjk->bik", a, b),
     lambda a, b: torch.einsum("bij,bjk->bik", a, b))
_add("einsum_ellipsis", {"a": S(2, 3, 5, 7), "b": S(3, 7, 4)}, lambda a, b: em.einsum("...ij,...jk->...ik", a, b),
     lambda a, b: torch.einsum("...ij,...jk->...ik", a, b))
_add("einsum_attention_scores", {"q": S(2, 3, 5, 4), "k": S(2, 3, 7, 4)},
     lambda q, k: em.einsum("bhqd,bhkd->bhqk", q, k), lambda q, k: torch.einsum("bhqd,bhkd->bhqk", q, k))
_add("einsum_outer", {"a": S(5), "b": S(7)}, lambda a, b: em.einsum("i,j->ij", a, b),
     lambda a, b: torch.einsum("i,j->ij", a, b))
_add("einsum_transpose", {"a": S(5, 7)}, lambda a: em.einsum("ij->ji", a), lambda a: torch.einsum("ij->ji", a))
_add("einsum_sum_all", {"a": S(5, 7)}, lambda a: em.einsum("ij->", a), lambda a: torch.einsum("ij->", a))
_add("einsum_implicit", {"a": S(5, 7), "b": S(7, 3)}, lambda a, b: em.einsum("ij,jk", a, b),
     lambda a, b: torch.einsum("ij,jk", a, b))
_add("einsum_three_operands", {"a": S(3, 5), "b": S(5, 7), "c": S(7, 2)},
     lambda a, b, c: em.einsum("ij,jk,kl->il", a, b, c), lambda a, b, c: torch.einsum("ij,jk,kl->il", a, b, c))
_add("einsum_ellipsis_uppercase", {"a": S(2, 3, 4, 5), "b": S(5, 6)},
     lambda a, b: em.einsum("...Ab,bc->...Ac", a, b), lambda a, b: torch.einsum("...Ab,bc->...Ac", a, b))
_add("einsum_trace_diagonal", {"a": S(5, 5), "b": S(2, 3, 3)},
     lambda a, b: (em.einsum("ii->", a), em.einsum("ii->i", a), em.einsum("bii->bi", b), em.einsum("ii", a)),
     lambda a, b: (torch.einsum("ii->", a), torch.einsum("ii->i", a), torch.einsum("bii->bi", b), torch.einsum("ii", a)))
_add("einsum_repeated_with_contraction", {"a": S(2, 3), "b": S(3, 3), "c": S(3, 4, 3)},
     lambda a, b, c: (em.einsum("ij,jj->i", a, b), em.einsum("iji->j", c)),
     lambda a, b, c: (torch.einsum("ij,jj->i", a, b), torch.einsum("iji->j", c)))
_add("einsum_ellipsis_bcast", {"a": S(1, 3, 5), "b": S(2, 1, 5)}, lambda a, b: em.einsum("...i,...i->...", a, b),
     lambda a, b: torch.einsum("...i,...i->...", a, b))

# ================================================================================================
# convolutions and pooling

_add("conv1d_basic_bias", {"x": S(2, 3, 13), "w": S(5, 3, 3), "b": S(5)},
     lambda x, w, b: em.conv1d(x, w, b), lambda x, w, b: F.conv1d(x, w, b))
_add("conv1d_stride_pad_dil", {"x": S(2, 3, 13), "w": S(4, 3, 3)},
     lambda x, w: em.conv1d(x, w, stride=2, padding=2, dilation=2),
     lambda x, w: F.conv1d(x, w, stride=2, padding=2, dilation=2))
_add("conv1d_same_even_kernel", {"x": S(1, 2, 11), "w": S(3, 2, 4)},
     lambda x, w: em.conv1d(x, w, padding="same"), lambda x, w: F.conv1d(x, w, padding="same"))
_add("conv1d_groups", {"x": S(2, 6, 9), "w": S(9, 2, 3), "b": S(9)},
     lambda x, w, b: em.conv1d(x, w, b, groups=3, padding=1), lambda x, w, b: F.conv1d(x, w, b, groups=3, padding=1))
_add("conv2d_basic", {"x": S(2, 3, 7, 9), "w": S(5, 3, 3, 3), "b": S(5)},
     lambda x, w, b: em.conv2d(x, w, b), lambda x, w, b: F.conv2d(x, w, b))
_add("conv2d_stride_pad", {"x": S(1, 3, 11, 7), "w": S(4, 3, 3, 5)},
     lambda x, w: em.conv2d(x, w, stride=(2, 1), padding=(1, 2)),
     lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(1, 2)))
_add("conv2d_dilation", {"x": S(2, 2, 9, 11), "w": S(3, 2, 3, 3)},
     lambda x, w: em.conv2d(x, w, dilation=(2, 3), padding=1), lambda x, w: F.conv2d(x, w, dilation=(2, 3), padding=1))
_add("conv2d_same_dilated", {"x": S(1, 3, 7, 6), "w": S(2, 3, 2, 3)},
     lambda x, w: em.conv2d(x, w, padding="same", dilation=2), lambda x, w: F.conv2d(x, w, padding="same", dilation=2))
_add("conv2d_groups", {"x": S(2, 4, 7, 5), "w": S(6, 2, 3, 3), "b": S(6)},
     lambda x, w, b: em.conv2d(x, w, b, stride=2, padding=1, groups=2),
     lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2))
_add("conv2d_depthwise", {"x": S(2, 5, 9, 7), "w": S(5, 1, 3, 3)},
     lambda x, w: em.conv2d(x, w, padding=1, groups=5), lambda x, w: F.conv2d(x, w, padding=1, groups=5))
_add("conv2d_1x1", {"x": S(3, 7, 5, 5), "w": S(3, 7, 1, 1)}, lambda x, w: em.conv2d(x, w), lambda x, w: F.conv2d(x, w))
_add("conv2d_valid_str", {"x": S(1, 2, 6, 7), "w": S(2, 2, 3, 2)},
     lambda x, w: em.conv2d(x, w, padding="valid"), lambda x, w: F.conv2d(x, w, padding="valid"))
_add("conv3d", {"x": S(1, 2, 5, 6, 7), "w": S(3, 2, 3, 2, 3), "b": S(3)},
     lambda x, w, b: em.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1)),
     lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1)))
_add("conv3d_dil_groups", {"x": S(1, 4, 5, 5, 6), "w": S(2, 2, 2, 2, 2)},
     lambda x, w: em.conv3d(x, w, dilation=2, groups=2), lambda x, w: F.conv3d(x, w, dilation=2, groups=2))
_add("conv_transpose2d_basic", {"x": S(2, 3, 5, 4), "w": S(3, 2, 3, 3), "b": S(2)},
     lambda x, w, b: em.conv_transpose2d(x, w, b), lambda x, w, b: F.conv_transpose2d(x, w, b))
_add("conv_transpose2d_stride_pad_outpad", {"x": S(1, 3, 5, 4), "w": S(3, 4, 3, 3)},
     lambda x, w: em.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
     lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1))
_add("conv_transpose2d_groups_dil", {"x": S(2, 4, 5, 3), "w": S(4, 3, 2, 3), "b": S(6)},
     lambda x, w, b: em.conv_transpose2d(x, w, b, stride=(2, 3), padding=(0, 1), output_padding=(1, 0), groups=2,
                                         dilation=(1, 2)),
     lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(0, 1), output_padding=(1, 0), groups=2,
                                        dilation=(1, 2)))
_add("conv_transpose1d", {"x": S(2, 3, 7), "w": S(3, 5, 4)},
     lambda x, w: em.conv_transpose1d(x, w, stride=3, padding=2), lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2))

_add("max_pool1d", {"x": S(2, 3, 13)}, lambda x: em.max_pool1d(x, 3, 2, 1), lambda x: F.max_pool1d(x, 3, 2, 1))
_add("max_pool1d_ceil_dil", {"x": S(2, 3, 13)}, lambda x: em.max_pool1d(x, 2, 3, 1, dilation=2, ceil_mode=True),
     lambda x: F.max_pool1d(x, 2, 3, 1, dilation=2, ceil_mode=True))
_add("max_pool2d", {"x": S(2, 3, 7, 9)}, lambda x: em.max_pool2d(x, 2), lambda x: F.max_pool2d(x, 2))
_add("max_pool2d_pad_stride", {"x": S(1, 2, 9, 7)}, lambda x: em.max_pool2d(x, (3, 2), (2, 1), (1, 1)),
     lambda x: F.max_pool2d(x, (3, 2), (2, 1), (1, 1)))
_add("max_pool2d_ceil", {"x": S(1, 3, 8, 7)}, lambda x: em.max_pool2d(x, 3, 2, 1, ceil_mode=True),
     lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True))
_add("max_pool2d_3d_input", {"x": S(3, 7, 5)}, lambda x: em.max_pool2d(x, 2, 1), lambda x: F.max_pool2d(x, 2, 1))
_add("max_pool2d_int", {"x": S(1, 2, 5, 5, dtype="int32", kind="int:-50:50")},
     lambda x: em.max_pool2d(x, 3, 2, 1), lambda x: F.max_pool2d(x.double(), 3, 2, 1).int(), grad=False,
     upcast=False)
_add("avg_pool1d", {"x": S(2, 3, 13)}, lambda x: em.avg_pool1d(x, 3, 2, 1), lambda x: F.avg_pool1d(x, 3, 2, 1))
_add("avg_pool1d_no_pad_count", {"x": S(2, 3, 13)}, lambda x: em.avg_pool1d(x, 4, 3, 2, count_include_pad=False),
     lambda x: F.avg_pool1d(x, 4, 3, 2, count_include_pad=False))
_add("avg_pool1d_ceil", {"x": S(1, 2, 10)}, lambda x: em.avg_pool1d(x, 3, 2, 1, ceil_mode=True),
     lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True))
_add("avg_pool2d", {"x": S(2, 3, 7, 9)}, lambda x: em.avg_pool2d(x, 3), lambda x: F.avg_pool2d(x, 3))
_add("avg_pool2d_pad", {"x": S(1, 3, 7, 6)}, lambda x: em.avg_pool2d(x, 3, 2, 1), lambda x: F.avg_pool2d(x, 3, 2, 1))
_add("avg_pool2d_pad_exclude", {"x": S(1, 3, 7, 6)}, lambda x: em.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
     lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False))
_add("avg_pool2d_ceil_include", {"x": S(1, 2, 8, 7)}, lambda x: em.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
     lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True))
_add("avg_pool2d_ceil_exclude", {"x": S(1, 2, 8, 7)},
     lambda x: em.avg_pool2d(x, (2, 3), 2, (1, 1), ceil_mode=True, count_include_pad=False),
     lambda x: F.avg_pool2d(x, (2, 3), 2, (1, 1), ceil_mode=True, count_include_pad=False))
_add("avg_pool2d_divisor", {"x": S(1, 2, 7, 7)}, lambda x: em.avg_pool2d(x, 3, 2, 1, divisor_override=5),
     lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=5))
_add("adaptive_avg_pool2d_uneven", {"x": S(2, 3, 7, 5)}, lambda x: em.adaptive_avg_pool2d(x, (3, 2)),
     lambda x: F.adaptive_avg_pool2d(x, (3, 2)))
_add("adaptive_avg_pool2d_even", {"x": S(2, 3, 6, 9)}, lambda x: em.adaptive_avg_pool2d(x, (3, 3)),
     lambda x: F.adaptive_avg_pool2d(x, (3, 3)))
_add("adaptive_avg_pool2d_global", {"x": S(2, 5, 7, 3)}, lambda x: em.adaptive_avg_pool2d(x, 1),
     lambda x: F.adaptive_avg_pool2d(x, 1))
_add("adaptive_avg_pool2d_none", {"x": S(1, 2, 7, 5)}, lambda x: em.adaptive_avg_pool2d(x, (2, None)),
     lambda x: F.adaptive_avg_pool2d(x, (2, None)))
_add("adaptive_avg_pool2d_upsample", {"x": S(1, 2, 3, 2)}, lambda x: em.adaptive_avg_pool2d(x, (5, 3)),
     lambda x: F.adaptive_avg_pool2d(x, (5, 3)))

# ================================================================================================
# normalisations

_add("layer_norm_affine", {"x": S(3, 5, 13), "w": S(13), "b": S(13)},
     lambda x, w, b: em.layer_norm(x, 13, w, b), lambda x, w, b: F.layer_norm(x, (13,), w, b))
_add("layer_norm_plain_2d", {"x": S(3, 5, 7)}, lambda x: em.layer_norm(x, (5, 7), eps=1e-3),
     lambda x: F.layer_norm(x, (5, 7), eps=1e-3))
_add("layer_norm_weight_only_2d", {"x": S(2, 3, 5), "w": S(3, 5)}, lambda x, w: em.layer_norm(x, (3, 5), w),
     lambda x, w: F.layer_norm(x, (3, 5), w))
_add("rms_norm_weight", {"x": S(3, 5, 13), "w": S(13)}, lambda x, w: em.rms_norm(x, 13, w, eps=1e-6),
     lambda x, w: F.rms_norm(x, (13,), w, eps=1e-6))
_add("rms_norm_default_eps_2d", {"x": S(3, 5, 7)}, lambda x: em.rms_norm(x, (5, 7)),
     lambda x: F.rms_norm(x, (5, 7)))
_add("group_norm_affine", {"x": S(2, 6, 5, 3), "w": S(6), "b": S(6)},
     lambda x, w, b: em.group_norm(x, 3, w, b), lambda x, w, b: F.group_norm(x, 3, w, b))
_add("group_norm_1d_plain", {"x": S(3, 4, 7)}, lambda x: em.group_norm(x, 2, eps=1e-3),
     lambda x: F.group_norm(x, 2, eps=1e-3))
_add("group_norm_one_group", {"x": S(2, 5, 3, 3)}, lambda x: em.group_norm(x, 1), lambda x: F.group_norm(x, 1))
_add("batch_norm_inference", {"x": S(3, 5, 7), "rm": S(5), "rv": S(5, kind="positive"), "w": S(5), "b": S(5)},
     lambda x, rm, rv, w, b: em.batch_norm(x, rm, rv, w, b),
     lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b))
_add("batch_norm_training", {"x": S(3, 5, 4, 3), "w": S(5), "b": S(5)},
     lambda x, w, b: em.batch_norm(x, None, None, w, b, training=True),
     lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True))
_add("batch_norm_training_2d_noaffine", {"x": S(7, 5)},
     lambda x: em.batch_norm(x, None, None, training=True, eps=1e-3),
     lambda x: F.batch_norm(x, None, None, training=True, eps=1e-3))


def _t_bn_stats(x, rm, rv, w, b):
    rm, rv = rm.clone(), rv.clone()
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2)
    return y, rm, rv


_add("batch_norm_training_running_stats", {"x": S(3, 5, 7), "rm": S(5), "rv": S(5, kind="positive"), "w": S(5),
                                           "b": S(5)},
     lambda x, rm, rv, w, b: em.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2, return_stats=True),
     _t_bn_stats)

# ================================================================================================
# gathers and masks

_add("embedding", {"idx": S(3, 5, dtype="int32", kind="int:0:11"), "table": S(11, 7)},
     lambda idx, table: em.embedding(idx, table), lambda idx, table: F.embedding(idx, table))
_add("gather_axis0", {"x": S(5, 7), "idx": S(3, 7, dtype="int32", kind="int:0:5")},
     lambda x, idx: x.gather(0, idx), lambda x, idx: x.gather(0, idx.long()))
_add("gather_axisneg1", {"x": S(3, 5, 7), "idx": S(3, 5, 4, dtype="int32", kind="int:0:7")},
     lambda x, idx: x.gather(-1, idx), lambda x, idx: x.gather(-1, idx.long()))
_add("gather_smaller_index", {"x": S(5, 7), "idx": S(2, 3, dtype="int32", kind="int:0:7")},
     lambda x, idx: x.gather(1, idx), lambda x, idx: x.gather(1, idx.long()))
_add("index_select_axis1", {"x": S(3, 5, 7), "idx": S(4, dtype="int32", kind="int:0:5")},
     lambda x, idx: x.index_select(1, idx), lambda x, idx: x.index_select(1, idx))
_add("index_select_negative", {"x": S(5, 7), "idx": S(6, dtype="int32", kind="int:-7:7")},
     lambda x, idx: x.index_select(-1, idx), lambda x, idx: x.index_select(-1, idx % 7))
_add("take", {"x": S(3, 5), "idx": S(2, 7, dtype="int32", kind="int:0:15")},
     lambda x, idx: x.take(idx), lambda x, idx: torch.take(x, idx.long()))
_add("take_negative", {"x": S(3, 5), "idx": S(9, dtype="int32", kind="int:-15:15")},
     lambda x, idx: x.take(idx), lambda x, idx: torch.take(x, idx.long()))
_add("one_hot", {"idx": S(3, 5, dtype="int32", kind="int:0:7")},
     lambda idx: em.one_hot(idx, 7, dtype=em.int32), lambda idx: F.one_hot(idx.long(), 7), grad=False)
_add("one_hot_float", {"idx": S(13, dtype="int32", kind="int:0:4")},
     lambda idx: em.one_hot(idx, 4), lambda idx: F.one_hot(idx.long(), 4).float(), grad=False)
_add("tril", {"x": S(3, 5, 7)}, lambda x: x.tril(), lambda x: x.tril())
_add("tril_k", {"x": S(5, 7)}, lambda x: (x.tril(2), x.tril(-1)), lambda x: (x.tril(2), x.tril(-1)))
_add("triu", {"x": S(3, 7, 5)}, lambda x: x.triu(), lambda x: x.triu())
_add("triu_k", {"x": S(5, 7)}, lambda x: (x.triu(1), x.triu(-2)), lambda x: (x.triu(1), x.triu(-2)))
_add("tril_triu_bool_int", {"b": S(4, 5, dtype="bool", kind="bool"), "i": S(5, 4, dtype="int32", kind="int:-5:5")},
     lambda b, i: (b.tril(), b.triu(1), i.tril(-1), i.triu()), lambda b, i: (b.tril(), b.triu(1), i.tril(-1), i.triu()),
     grad=False)
_add("index_list_and_array", {"x": S(7, 5)}, lambda x: (x[[0, 2, -1]], x[:, np.array([4, 0, 4])], x[[[1], [3]]]),
     lambda x: (x[[0, 2, -1]], x[:, torch.tensor([4, 0, 4])], x[torch.tensor([[1], [3]])]))
_add("masked_fill", {"x": S(5, 7), "m": S(7, dtype="bool", kind="bool")},
     lambda x, m: x.masked_fill(m, -2.5), lambda x, m: x.masked_fill(m, -2.5))
_add("index_tensor_first", {"x": S(7, 5), "idx": S(2, 3, dtype="int32", kind="int:0:7")},
     lambda x, idx: x[idx], lambda x, idx: x[idx.long()])
_add("index_tensor_second", {"x": S(3, 7, 5), "idx": S(4, dtype="int32", kind="int:-7:7")},
     lambda x, idx: x[:, idx], lambda x, idx: x[:, idx.long()])
_add("index_tensor_ellipsis", {"x": S(3, 5, 7), "idx": S(2, 3, dtype="int32", kind="int:0:7")},
     lambda x, idx: x[..., idx], lambda x, idx: x[..., idx.long()])
_add("index_tensor_with_slices", {"x": S(5, 7, 3), "idx": S(4, dtype="int32", kind="int:-3:3")},
     lambda x, idx: x[1:4, ..., idx], lambda x, idx: x[1:4, ..., idx.long()])
_add("index_tensor_step_slice", {"x": S(7, 5), "idx": S(2, 2, dtype="int32", kind="int:0:5")},
     lambda x, idx: x[::2, idx], lambda x, idx: x[::2, idx.long()])

# ================================================================================================
# movement

_add("concat_axis1", {"a": S(3, 2, 5), "b": S(3, 7, 5), "c": S(3, 1, 5)},
     lambda a, b, c: em.concat([a, b, c], 1), lambda a, b, c: torch.cat([a, b, c], 1))
_add("concat_axisneg1", {"a": S(3, 5), "b": S(3, 2)}, lambda a, b: em.cat([a, b], -1),
     lambda a, b: torch.cat([a, b], -1))
_add("stack_axis0", {"a": S(3, 5), "b": S(3, 5)}, lambda a, b: em.stack([a, b]), lambda a, b: torch.stack([a, b]))
_add("stack_axisneg1", {"a": S(3, 5), "b": S(3, 5), "c": S(3, 5)},
     lambda a, b, c: em.stack([a, b, c], -1), lambda a, b, c: torch.stack([a, b, c], -1))
_add("split_size", {"x": S(7, 3)}, lambda x: tuple(x.split(3, 0)), lambda x: tuple(x.split(3, 0)))
_add("split_sizes", {"x": S(3, 13)}, lambda x: tuple(x.split([2, 5, 6], 1)), lambda x: tuple(x.split([2, 5, 6], 1)))
_add("chunk", {"x": S(3, 11)}, lambda x: tuple(x.chunk(3, -1)), lambda x: tuple(x.chunk(3, -1)))
_add("unbind", {"x": S(3, 5, 2)}, lambda x: tuple(x.unbind(1)), lambda x: tuple(x.unbind(1)))
_add("reshape_infer", {"x": S(3, 5, 7)}, lambda x: x.reshape(5, -1), lambda x: x.reshape(5, -1))
_add("reshape_of_permute", {"x": S(3, 5, 7)}, lambda x: x.permute(2, 0, 1).reshape(7, 15),
     lambda x: x.permute(2, 0, 1).reshape(7, 15))
_add("permute", {"x": S(2, 3, 5, 7)}, lambda x: x.permute(3, 1, 0, 2), lambda x: x.permute(3, 1, 0, 2))
_add("transpose", {"x": S(2, 3, 5)}, lambda x: x.transpose(0, -1), lambda x: x.transpose(0, -1))
_add("transpose_T", {"x": S(3, 5)}, lambda x: x.T + 0.0, lambda x: x.T + 0.0)
_add("expand", {"x": S(3, 1, 5)}, lambda x: x.expand(2, 3, 7, 5), lambda x: x.expand(2, 3, 7, 5))
_add("expand_minus1", {"x": S(3, 1)}, lambda x: x.expand(-1, 4), lambda x: x.expand(-1, 4))
_add("unsqueeze_squeeze", {"x": S(3, 1, 5)},
     lambda x: (x.unsqueeze(0), x.unsqueeze(-1), x.squeeze(), x.squeeze(1), x.squeeze(0)),
     lambda x: (x.unsqueeze(0), x.unsqueeze(-1), x.squeeze(), x.squeeze(1), x.squeeze(0)))
_add("flatten", {"x": S(2, 3, 5, 7)}, lambda x: (x.flatten(), x.flatten(1), x.flatten(1, 2)),
     lambda x: (x.flatten(), x.flatten(1), x.flatten(1, 2)))
_add("flip", {"x": S(3, 5, 7)}, lambda x: (x.flip(0), x.flip((1, -1))), lambda x: (x.flip(0), x.flip((1, -1))))
_add("pad_zero", {"x": S(3, 5, 7)}, lambda x: em.pad(x, (1, 2, 0, 3)), lambda x: F.pad(x, (1, 2, 0, 3)))
_add("pad_value", {"x": S(3, 5)}, lambda x: em.pad(x, (2, 1, 1, 1), value=-1.5),
     lambda x: F.pad(x, (2, 1, 1, 1), value=-1.5))
_add("pad_negative", {"x": S(3, 5, 7)}, lambda x: em.pad(x, (-2, 1, 1, -1)), lambda x: F.pad(x, (-2, 1, 1, -1)))
_add("pad_negative_value", {"x": S(5, 7)}, lambda x: em.pad(x, (1, -3, -1, 2), value=3.0),
     lambda x: F.pad(x, (1, -3, -1, 2), value=3.0))
_add("slice_steps", {"x": S(7, 13)}, lambda x: x[1:6:2, ::3], lambda x: x[1:6:2, ::3])
_add("slice_negative_bounds", {"x": S(7, 13)}, lambda x: x[-5:-1, 2:-3], lambda x: x[-5:-1, 2:-3])
_add("slice_int_and_none", {"x": S(3, 5, 7)}, lambda x: x[1, None, :, -2], lambda x: x[1, None, :, -2])
_add("slice_ellipsis", {"x": S(3, 5, 7)}, lambda x: x[..., 1:4], lambda x: x[..., 1:4])
# torch rejects negative steps; the flipped view is the same thing
_add("slice_negative_step", {"x": S(7, 13)}, lambda x: x[::-1, 11:2:-3],
     lambda x: x.flip((0, 1))[:, 1:10:3])
_add("slice_negative_step_full", {"x": S(13,)}, lambda x: x[::-2], lambda x: x.flip(0)[::2])
_add("repeat", {"x": S(3, 5)}, lambda x: x.repeat(2, 1, 3), lambda x: x.repeat(2, 1, 3))
_add("roll", {"x": S(3, 5, 7)}, lambda x: (x.roll(2, 1), x.roll((-3, 9), (0, 2))),
     lambda x: (x.roll(2, 1), x.roll((-3, 9), (0, 2))))
_add("narrow_negative_start", {"x": S(3, 7)}, lambda x: (x.narrow(1, -3, 2), x.narrow(-1, -7, 7)),
     lambda x: (x.narrow(1, -3, 2), x.narrow(-1, -7, 7)))
_add("narrow_movedim", {"x": S(3, 5, 7)}, lambda x: x.narrow(2, 1, 4).movedim(0, -1),
     lambda x: x.narrow(2, 1, 4).movedim(0, -1))

# ================================================================================================
# attention and rotary embeddings

_add("sdpa_basic", {"q": S(2, 3, 5, 4), "k": S(2, 3, 7, 4), "v": S(2, 3, 7, 6)},
     lambda q, k, v: em.scaled_dot_product_attention(q, k, v),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v))
_add("sdpa_causal_square", {"q": S(1, 2, 7, 8), "k": S(1, 2, 7, 8), "v": S(1, 2, 7, 8)},
     lambda q, k, v: em.scaled_dot_product_attention(q, k, v, is_causal=True),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))
_add("sdpa_causal_rect_scale", {"q": S(2, 1, 5, 3), "k": S(2, 1, 7, 3), "v": S(2, 1, 7, 3)},
     lambda q, k, v: em.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3))
_add("sdpa_float_mask", {"q": S(2, 3, 5, 4), "k": S(2, 3, 7, 4), "v": S(2, 3, 7, 4), "m": S(5, 7)},
     lambda q, k, v, m: em.scaled_dot_product_attention(q, k, v, attn_mask=m),
     lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m))
_add("sdpa_bool_mask", {"q": S(2, 3, 5, 4), "k": S(2, 3, 7, 4), "v": S(2, 3, 7, 4), "m": S(2, 1, 5, 7)},
     lambda q, k, v, m: em.scaled_dot_product_attention(q, k, v, attn_mask=_e_mask(m, 7)),
     lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=_t_mask(m, 7)))
_add("sdpa_bool_mask_fully_masked_row", {"q": S(1, 2, 5, 4), "k": S(1, 2, 3, 4), "v": S(1, 2, 3, 4), "m": S(5, 3)},
     lambda q, k, v, m: em.scaled_dot_product_attention(
         q, k, v, attn_mask=(m > 0) & (em.arange(5).reshape(5, 1) != 1)),
     lambda q, k, v, m: F.scaled_dot_product_attention(
         q, k, v, attn_mask=(m > 0) & (torch.arange(5).reshape(5, 1) != 1)))
_add("sdpa_float_mask_neg_inf_row", {"q": S(1, 2, 5, 4), "k": S(1, 2, 3, 4), "v": S(1, 2, 3, 4), "m": S(5, 3)},
     lambda q, k, v, m: em.scaled_dot_product_attention(
         q, k, v, attn_mask=em.where(em.arange(5).reshape(5, 1) == 2, -math.inf, m)),
     lambda q, k, v, m: F.scaled_dot_product_attention(
         q, k, v, attn_mask=torch.where(torch.arange(5).reshape(5, 1) == 2, -math.inf, m)))
_add("sdpa_gqa", {"q": S(2, 6, 5, 4), "k": S(2, 2, 7, 4), "v": S(2, 2, 7, 4)},
     lambda q, k, v: em.scaled_dot_product_attention(q, k, v, enable_gqa=True),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
_add("sdpa_gqa_causal", {"q": S(1, 4, 7, 4), "k": S(1, 1, 7, 4), "v": S(1, 1, 7, 5)},
     lambda q, k, v: em.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
_add("sdpa_torch_positional", {"q": S(1, 2, 5, 4), "k": S(1, 2, 5, 4), "v": S(1, 2, 5, 4)},
     lambda q, k, v: em.scaled_dot_product_attention(q, k, v, None, 0.0, True),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, None, 0.0, True))
_add("sdpa_3d", {"q": S(3, 5, 4), "k": S(3, 7, 4), "v": S(3, 7, 2)},
     lambda q, k, v: em.scaled_dot_product_attention(q, k, v),
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v))
_add("rotary_half", {"x": S(2, 3, 5, 8), "cos": S(5, 8), "sin": S(5, 8)},
     lambda x, cos, sin: em.rotary_embedding(x, cos, sin),
     lambda x, cos, sin: x * cos + _t_rotate(x, False) * sin)
_add("rotary_interleaved", {"x": S(2, 3, 5, 6), "cos": S(5, 6), "sin": S(5, 6)},
     lambda x, cos, sin: em.rotary_embedding(x, cos, sin, interleaved=True),
     lambda x, cos, sin: x * cos + _t_rotate(x, True) * sin)
_add("rotary_tables", {"x": S(1, 2, 7, 6)},
     lambda x: em.rotary_embedding(x, *em.rope_cos_sin(7, 6)),
     lambda x: x * _t_rope_tables(7, 6, dtype=x.dtype)[0] + _t_rotate(x, False) * _t_rope_tables(7, 6, dtype=x.dtype)[1])
_add("rotary_tables_offset_base", {"x": S(1, 2, 5, 10)},
     lambda x: em.rotary_embedding(x, *em.rope_cos_sin(5, 10, base=500.0, offset=3)),
     lambda x: (x * _t_rope_tables(5, 10, 500.0, 3, x.dtype)[0]
                + _t_rotate(x, False) * _t_rope_tables(5, 10, 500.0, 3, x.dtype)[1]))

# ================================================================================================
# losses

_add("mse_loss_mean", {"p": S(5, 7), "t": S(5, 7)}, lambda p, t: em.mse_loss(p, t), lambda p, t: F.mse_loss(p, t))
_add("mse_loss_sum_none", {"p": S(3, 5), "t": S(3, 5)},
     lambda p, t: (em.mse_loss(p, t, reduction="sum"), em.mse_loss(p, t, reduction="none")),
     lambda p, t: (F.mse_loss(p, t, reduction="sum"), F.mse_loss(p, t, reduction="none")))
_add("cross_entropy_indices", {"x": S(5, 7), "t": S(5, dtype="int32", kind="int:0:7")},
     lambda x, t: em.cross_entropy(x * 3, t), lambda x, t: F.cross_entropy(x * 3, t.long()))
_add("cross_entropy_spatial_sum", {"x": S(2, 5, 3, 4), "t": S(2, 3, 4, dtype="int32", kind="int:0:5")},
     lambda x, t: em.cross_entropy(x, t, reduction="sum"),
     lambda x, t: F.cross_entropy(x, t.long(), reduction="sum"))
_add("cross_entropy_unbatched", {"x": S(7), "t": S(dtype="int32", kind="int:0:7")},
     lambda x, t: em.cross_entropy(x, t), lambda x, t: F.cross_entropy(x, t.long()))
_add("cross_entropy_probs", {"x": S(5, 7), "t": S(5, 7)},
     lambda x, t: em.cross_entropy(x, t.softmax(1)), lambda x, t: F.cross_entropy(x, t.softmax(1)))
_add("cross_entropy_label_smoothing", {"x": S(5, 7), "t": S(5, dtype="int32", kind="int:0:7")},
     lambda x, t: em.cross_entropy(x, t, label_smoothing=0.15, reduction="none"),
     lambda x, t: F.cross_entropy(x, t.long(), label_smoothing=0.15, reduction="none"))
_add("cross_entropy_probs_smoothing", {"x": S(3, 7), "t": S(3, 7)},
     lambda x, t: em.cross_entropy(x, t.softmax(-1), label_smoothing=0.2),
     lambda x, t: F.cross_entropy(x, t.softmax(-1), label_smoothing=0.2))
_add("cross_entropy_ignore_index", {"x": S(7, 5), "t": S(7, dtype="int32", kind="int:-1:5")},
     lambda x, t: (em.cross_entropy(x, t, ignore_index=-1), em.cross_entropy(x, t, reduction="none", ignore_index=-1),
                   em.cross_entropy(x, t, label_smoothing=0.1, ignore_index=-1)),
     lambda x, t: (F.cross_entropy(x, t.long(), ignore_index=-1),
                   F.cross_entropy(x, t.long(), reduction="none", ignore_index=-1),
                   F.cross_entropy(x, t.long(), label_smoothing=0.1, ignore_index=-1)))
_add("cross_entropy_default_ignore_minus100", {"x": S(2, 5, 3), "t": S(2, 3, dtype="int32", kind="int:0:5")},
     lambda x, t: em.cross_entropy(x, em.where(t == 0, -100, t)),
     lambda x, t: F.cross_entropy(x, torch.where(t == 0, -100, t).long()))
_add("nll_loss_ignore_class", {"x": S(7, 5), "t": S(7, dtype="int32", kind="int:0:5")},
     lambda x, t: (em.nll_loss(x, t, ignore_index=2), em.nll_loss(x, t, reduction="sum", ignore_index=2)),
     lambda x, t: (F.nll_loss(x, t.long(), ignore_index=2), F.nll_loss(x, t.long(), reduction="sum", ignore_index=2)))
_add("nll_loss", {"x": S(5, 7), "t": S(5, dtype="int32", kind="int:0:7")},
     lambda x, t: em.nll_loss(x.log_softmax(1), t), lambda x, t: F.nll_loss(x.log_softmax(1), t.long()))
_add("nll_loss_spatial_none", {"x": S(2, 5, 3), "t": S(2, 3, dtype="int32", kind="int:0:5")},
     lambda x, t: em.nll_loss(x, t, reduction="none"), lambda x, t: F.nll_loss(x, t.long(), reduction="none"))
_add("bce_with_logits", {"x": S(5, 7), "t": S(5, 7)},
     lambda x, t: em.binary_cross_entropy_with_logits(x * 4, t.sigmoid()),
     lambda x, t: F.binary_cross_entropy_with_logits(x * 4, t.sigmoid()))
_add("bce_with_logits_sum_large", {"x": S(13), "t": S(13)},
     lambda x, t: em.binary_cross_entropy_with_logits(x * 50, t.sigmoid(), reduction="sum"),
     lambda x, t: F.binary_cross_entropy_with_logits(x * 50, t.sigmoid(), reduction="sum"))

# ================================================================================================
# casts (the oracle runs in the inputs' own dtypes: a cast *is* its rounding)

_CASTS = [("f32_f16", "float32", "normal", em.float16, "float16"),
          ("f32_bf16", "float32", "normal", em.bfloat16, "bfloat16"),
          ("f16_f32", "float16", "normal", em.float32, "float32"),
          ("bf16_f32", "bfloat16", "normal", em.float32, "float32"),
          ("f16_bf16", "float16", "normal", em.bfloat16, "bfloat16"),
          ("f32_i32", "float32", "normal", em.int32, "int32"),
          ("i32_f32", "int32", "int:-1000:1000", em.float32, "float32"),
          ("i32_f16", "int32", "int:-3000:3000", em.float16, "float16"),
          ("f32_bool", "float32", "int:-2:3", em.bool_, "bool"),
          ("bool_f32", "bool", "bool", em.float32, "float32"),
          ("i32_bool", "int32", "int:-2:3", em.bool_, "bool"),
          ("bool_i32", "bool", "bool", em.int32, "int32"),
          ("bf16_i32", "bfloat16", "normal", em.int32, "int32"),
          ("f16_i32", "float16", "normal", em.int32, "int32"),
          ("bf16_f16", "bfloat16", "normal", em.float16, "float16"),
          ("bool_bf16", "bool", "bool", em.bfloat16, "bfloat16"),
          ("f16_bool", "float16", "int:-2:3", em.bool_, "bool"),
          ("i32_bf16", "int32", "int:-300:300", em.bfloat16, "bfloat16")]
for _n, _src, _kind, _to, _tto in _CASTS:
    # scale floats so the integer casts see more than {-2..2}; the scale is exact in every float type
    _sc = 8.0 if _src in ("float32", "float16", "bfloat16") and _to in (em.int32,) else 1.0
    _add(f"cast_{_n}", {"x": S(5, 7, dtype=_src, kind=_kind)},
         lambda x, _to=_to, _sc=_sc: (x * _sc if _sc != 1.0 else x).cast(_to),
         lambda x, _tto=_tto, _sc=_sc: (x * _sc if _sc != 1.0 else x).to(getattr(torch, _tto)),
         grad=_to.is_float and _src.startswith(("float", "bfloat")), upcast=False)
_add("cast_methods", {"x": S(3, 5)}, lambda x: (x.half(), x.bfloat16(), (x * 4).int(), x.bool(), x.half().float()),
     lambda x: (x.half(), x.bfloat16(), (x * 4).int(), x.bool(), x.half().float()), grad=False, upcast=False)

# ================================================================================================
# half-precision variants of the main ops (the oracle runs in float64 on the same rounded inputs)

for _dt, _tag in (("float16", "f16"), ("bfloat16", "bf16")):
    _add(f"add_mul_{_tag}", {"a": S(5, 13, dtype=_dt), "b": S(13, dtype=_dt)},
         lambda a, b: a * b + a, lambda a, b: a * b + a, tags=(_tag,))
    _add(f"exp_{_tag}", {"x": S(5, 13, dtype=_dt)}, lambda x: x.exp(), lambda x: x.exp(), tags=(_tag,))
    _add(f"gelu_{_tag}", {"x": S(5, 13, dtype=_dt)}, lambda x: x.gelu(), lambda x: F.gelu(x), tags=(_tag,))
    _add(f"silu_{_tag}", {"x": S(5, 13, dtype=_dt)}, lambda x: x.silu(), lambda x: F.silu(x), tags=(_tag,))
    _add(f"div_{_tag}", {"a": S(5, 13, dtype=_dt), "b": S(5, 13, dtype=_dt, kind="positive")},
         lambda a, b: a / b, lambda a, b: a / b, tags=(_tag,))
    _add(f"sum_{_tag}", {"x": S(3, 5, 37, dtype=_dt)}, lambda x: x.sum(-1), lambda x: x.sum(-1), tags=(_tag,))
    _add(f"mean_{_tag}", {"x": S(3, 5, 7, dtype=_dt)}, lambda x: x.mean((0, 2), keepdim=True),
         lambda x: x.mean((0, 2), keepdim=True), tags=(_tag,))
    _add(f"max_{_tag}", {"x": S(3, 5, 7, dtype=_dt)}, lambda x: x.max(1), lambda x: x.amax(1), tags=(_tag,))
    _add(f"var_{_tag}", {"x": S(3, 13, dtype=_dt)}, lambda x: x.var(1), lambda x: x.var(1), tags=(_tag,))
    _add(f"matmul_{_tag}", {"a": S(5, 37, dtype=_dt), "b": S(37, 7, dtype=_dt)}, lambda a, b: a @ b,
         lambda a, b: a @ b, tags=(_tag,))
    _add(f"matmul_batched_{_tag}", {"a": S(3, 5, 13, dtype=_dt), "b": S(3, 13, 7, dtype=_dt)}, lambda a, b: a @ b,
         lambda a, b: a @ b, tags=(_tag,))
    _add(f"linear_{_tag}", {"x": S(5, 13, dtype=_dt), "w": S(7, 13, dtype=_dt), "b": S(7, dtype=_dt)},
         lambda x, w, b: em.linear(x, w, b), lambda x, w, b: F.linear(x, w, b), tags=(_tag,))
    _add(f"softmax_{_tag}", {"x": S(5, 13, dtype=_dt)}, lambda x: (x * 3).softmax(-1), lambda x: (x * 3).softmax(-1),
         tags=(_tag,))
    _add(f"log_softmax_{_tag}", {"x": S(5, 13, dtype=_dt)}, lambda x: x.log_softmax(0), lambda x: x.log_softmax(0),
         tags=(_tag,))
    _add(f"layer_norm_{_tag}", {"x": S(3, 5, 13, dtype=_dt), "w": S(13, dtype=_dt), "b": S(13, dtype=_dt)},
         lambda x, w, b: em.layer_norm(x, 13, w, b), lambda x, w, b: F.layer_norm(x, (13,), w, b), tags=(_tag,))
    _add(f"rms_norm_{_tag}", {"x": S(3, 13, dtype=_dt), "w": S(13, dtype=_dt)},
         lambda x, w: em.rms_norm(x, 13, w, eps=1e-5), lambda x, w: F.rms_norm(x, (13,), w, eps=1e-5), tags=(_tag,))
    _add(f"sdpa_causal_{_tag}", {"q": S(1, 2, 5, 8, dtype=_dt), "k": S(1, 2, 5, 8, dtype=_dt),
                                 "v": S(1, 2, 5, 8, dtype=_dt)},
         lambda q, k, v: em.scaled_dot_product_attention(q, k, v, is_causal=True),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), tags=(_tag,))
    _add(f"conv2d_{_tag}", {"x": S(1, 3, 7, 5, dtype=_dt), "w": S(4, 3, 3, 3, dtype=_dt)},
         lambda x, w: em.conv2d(x, w, padding=1), lambda x, w: F.conv2d(x, w, padding=1), tags=(_tag,))
_add("mixed_f16_f32_promotion", {"a": S(5, 7, dtype="float16"), "b": S(7)}, lambda a, b: a * b, lambda a, b: a * b)
_add("mixed_f16_bf16_promotion", {"a": S(5, 7, dtype="float16"), "b": S(7, dtype="bfloat16")},
     lambda a, b: a + b, lambda a, b: a + b)


# ================================================================================================
# the rest of the Tensor API (less common elementwise math, losses, helpers)

_add("sign", {"x": S(5, 13, kind="int:-2:3")}, lambda x: (x * 0.5).sign(), lambda x: (x * 0.5).sign(), grad=False)
_add("lerp_tensor_weight", {"a": S(5, 7), "b": S(5, 7), "w": S(7, kind="unit")}, lambda a, b, w: a.lerp(b, w),
     lambda a, b, w: torch.lerp(a, b, w))
_add("lerp_scalar_weight", {"a": S(5, 7), "b": S(7)}, lambda a, b: a.lerp(b, 0.3), lambda a, b: torch.lerp(a, b, 0.3))
_add("log1p_expm1", {"x": S(5, 7, kind="unit")}, lambda x: (x.log1p(), x.expm1()), lambda x: (x.log1p(), x.expm1()))
# x * 1e-6 then * 1e6: a plain log(1 + x) / exp(x) - 1 loses ~6% to float32 cancellation here
_add("log1p_tiny", {"x": S(5, 7, kind="unit")}, lambda x: (x * 1e-6).log1p() * 1e6, lambda x: (x * 1e-6).log1p() * 1e6)
_add("expm1_tiny", {"x": S(5, 7, kind="unit")}, lambda x: (x * 1e-6).expm1() * 1e6, lambda x: (x * 1e-6).expm1() * 1e6)
_add("log1p_expm1_special", {"x": S(5, 13)},
     lambda x: (_e_special(x * 2).log1p(), _e_special(x * 2).expm1(), (x.clamp(-2, 2) * 40).expm1(), (x.abs() * 1e30).log1p()),
     lambda x: (_t_special(x * 2).log1p(), _t_special(x * 2).expm1(), (x.clamp(-2, 2) * 40).expm1(), (x.abs() * 1e30).log1p()),
     grad=False)
_add("trig", {"x": S(5, 7)}, lambda x: ((x * 3).sin(), (x * 3).cos(), x.tan()),
     lambda x: ((x * 3).sin(), (x * 3).cos(), x.tan()))
_add("sin_cos_large_arg", {"x": S(13)}, lambda x: ((x * 200).sin(), (x * 200).cos()),
     lambda x: ((x * 200).sin(), (x * 200).cos()))
_add("log2_log10_exp2", {"x": S(5, 7, kind="positive")}, lambda x: (x.log2(), x.log10(), (x * 5).exp2()),
     lambda x: (x.log2(), x.log10(), (x * 5).exp2()))
_add("square_reciprocal", {"x": S(5, 7, kind="positive")}, lambda x: (x.square(), x.reciprocal()),
     lambda x: (x.square(), x.reciprocal()))
_add("logsigmoid", {"x": S(5, 7)}, lambda x: em.logsigmoid(x * 30), lambda x: F.logsigmoid(x * 30))
_add("mish", {"x": S(5, 7)}, lambda x: em.mish(x * 3), lambda x: F.mish(x * 3))
_add("selu", {"x": S(5, 7)}, lambda x: em.selu(x * 2), lambda x: F.selu(x * 2))
_add("relu6", {"x": S(5, 7)}, lambda x: em.relu6(x * 5), lambda x: F.relu6(x * 5))
_add("hardsigmoid_hardswish", {"x": S(5, 7)}, lambda x: (em.hardsigmoid(x * 4), em.hardswish(x * 4)),
     lambda x: (F.hardsigmoid(x * 4), F.hardswish(x * 4)))
_add("softsign", {"x": S(5, 7)}, lambda x: em.softsign(x * 3), lambda x: F.softsign(x * 3))
_add("erf", {"x": S(5, 13)}, lambda x: em.erf(x * 2), lambda x: torch.erf(x * 2))
_add("logical_fns", {"a": S(5, 7, kind="int:-1:2"), "b": S(7, dtype="bool", kind="bool")},
     lambda a, b: (a.logical_not(), a.logical_and(b), a.logical_or(b)),
     lambda a, b: (a.logical_not(), a.logical_and(b), a.logical_or(b)), grad=False)
_add("bool_add_mul", {"a": S(5, 7, dtype="bool", kind="bool"), "b": S(7, dtype="bool", kind="bool")},
     lambda a, b: (a + b, a * b), lambda a, b: (a + b, a * b), grad=False)
_add("int_where_float_scalar", {"c": S(5, 7, dtype="bool", kind="bool"), "a": S(5, 7, dtype="int32", kind="int:-9:9")},
     lambda c, a: em.where(c, a, 1.5), lambda c, a: torch.where(c, a, 1.5), grad=False)
_add("int_compare_float_scalar", {"a": S(5, 7, dtype="int32", kind="int:-3:3")},
     lambda a: (a < 0.5, a >= -1.5, a == 1.0), lambda a: (a < 0.5, a >= -1.5, a == 1.0), grad=False)
_add("l1_loss", {"p": S(5, 7), "t": S(5, 7)}, lambda p, t: em.l1_loss(p, t), lambda p, t: F.l1_loss(p, t))
_add("huber_loss", {"p": S(5, 7), "t": S(5, 7)}, lambda p, t: em.huber_loss(p * 2, t, delta=0.7),
     lambda p, t: F.huber_loss(p * 2, t, delta=0.7))
_add("smooth_l1_loss", {"p": S(5, 7), "t": S(5, 7)}, lambda p, t: em.smooth_l1_loss(p * 2, t, beta=0.6, reduction="sum"),
     lambda p, t: F.smooth_l1_loss(p * 2, t, beta=0.6, reduction="sum"))
_add("binary_cross_entropy", {"p": S(5, 7), "t": S(5, 7)},
     lambda p, t: em.binary_cross_entropy(p.sigmoid(), t.sigmoid()),
     lambda p, t: F.binary_cross_entropy(p.sigmoid(), t.sigmoid()))
_add("normalize", {"x": S(3, 5, 7)}, lambda x: em.normalize(x, axis=1), lambda x: F.normalize(x, dim=1))
_add("dot_outer", {"a": S(13), "b": S(13)}, lambda a, b: (em.dot(a, b), em.outer(a, b)),
     lambda a, b: (torch.dot(a, b), torch.outer(a, b)))
_add("unflatten_view", {"x": S(3, 35)}, lambda x: (x.unflatten(1, (5, 7)), x.view(7, 15)),
     lambda x: (x.unflatten(1, (5, 7)), x.view(7, 15)))
_add("mT_transpose", {"x": S(2, 3, 5)}, lambda x: x.mT * 1.0, lambda x: x.mT * 1.0)
_add("repeat_kv", {"x": S(2, 3, 5, 4)}, lambda x: em.repeat_kv(x, 3), lambda x: x.repeat_interleave(3, dim=1))
_add("module_level_reductions", {"x": S(3, 5, 7)},
     lambda x: (em.sum(x, 1), em.amax(x, (0, 2)), em.amin(x, -1), em.mean(x, 0), em.softmax(x, 1),
                em.log_softmax(x, -1), em.logsumexp(x, 2), em.cumsum(x, 1)),
     lambda x: (x.sum(1), x.amax((0, 2)), x.amin(-1), x.mean(0), x.softmax(1), x.log_softmax(-1), x.logsumexp(2),
                x.cumsum(1)))
_add("constants_with_input", {"x": S(3, 5)},
     lambda x: (x + em.ones((3, 5)) * 2 - em.full((5,), 0.5) + em.arange(5) - em.arange(1.0, 2.0, 0.2),
                em.zeros_like(x) + em.ones_like(x)),
     lambda x: (x + torch.ones(3, 5) * 2 - torch.full((5,), 0.5) + torch.arange(5) - torch.arange(1.0, 2.0, 0.2),
                torch.zeros_like(x) + torch.ones_like(x)))
_add("arange_int_steps", {"x": S(1, dtype="int32", kind="int:-5:5")},
     lambda x: (em.arange(2, 11, 3) + x, em.arange(10, 2, -2) * x),
     lambda x: (torch.arange(2, 11, 3, dtype=torch.int32) + x, torch.arange(10, 2, -2, dtype=torch.int32) * x),
     grad=False)
_add("softmax_dtype_f32_from_f16", {"x": S(5, 7, dtype="float16")}, lambda x: x.softmax(-1, dtype=em.float32),
     lambda x: x.softmax(-1, dtype=torch.float32 if x.dtype == torch.float16 else x.dtype))
_add("sum_dtype_arg", {"x": S(5, 7, dtype="int32", kind="int:-9:9")}, lambda x: x.sum(1, dtype=em.float32),
     lambda x: x.sum(1, dtype=torch.float32), grad=False)
_add("cumsum_bool", {"x": S(3, 7, dtype="bool", kind="bool")}, lambda x: x.cumsum(1), lambda x: x.cumsum(1), grad=False)
_add("roll_flat", {"x": S(3, 5)}, lambda x: x.roll(4), lambda x: x.roll(4))
_add("roll_negative_large", {"x": S(3, 5)}, lambda x: x.roll(-13, -1), lambda x: x.roll(-13, -1))
_add("clip_alias", {"x": S(5, 7)}, lambda x: x.clip(-0.5, 0.5), lambda x: x.clip(-0.5, 0.5))

# 0-d tensors and size-1 axes
_add("scalar_input_math", {"s": S(), "x": S(3, 5)}, lambda s, x: (s.exp(), s * x + s, x.sum() * s),
     lambda s, x: (s.exp(), s * x + s, x.sum() * s))
_add("scalar_reductions", {"s": S()}, lambda s: (s.sum(), s.max(), s.mean(), s.softmax(0), s.logsumexp()),
     lambda s: (s.sum(), s.amax(), s.mean(), s.softmax(0), s.logsumexp(0)))
_add("tensor_amax_amin_methods", {"x": S(3, 5, 7)}, lambda x: (x.amax((0, 2)), x.amin(-1, keepdim=True)),
     lambda x: (x.amax((0, 2)), x.amin(-1, keepdim=True)))
_add("var_size1_axis_nan", {"x": S(5, 1)}, lambda x: (x.var(1), x.std(1, correction=0)),
     lambda x: (x.var(1), x.std(1, correction=0)), grad=False)
_add("matmul_m1_n1", {"a": S(1, 13), "b": S(13, 1)}, lambda a, b: a @ b, lambda a, b: a @ b)
_add("conv_unbatched", {"x": S(3, 7), "w": S(2, 3, 3), "y": S(2, 5, 4), "wt": S(2, 3, 2, 2)},
     lambda x, w, y, wt: (em.conv1d(x, w, padding=1), em.conv_transpose2d(y, wt, stride=2)),
     lambda x, w, y, wt: (F.conv1d(x, w, padding=1), F.conv_transpose2d(y, wt, stride=2)))
_add("conv2d_1x1_image", {"x": S(2, 3, 1, 1), "w": S(5, 3, 1, 1), "b": S(5)},
     lambda x, w, b: em.conv2d(x, w, b), lambda x, w, b: F.conv2d(x, w, b))
_add("conv2d_kernel_larger_than_input_padded", {"x": S(1, 2, 2, 3), "w": S(3, 2, 5, 5)},
     lambda x, w: em.conv2d(x, w, padding=2), lambda x, w: F.conv2d(x, w, padding=2))
_add("conv_transpose2d_big_padding", {"x": S(1, 2, 5, 6), "w": S(2, 3, 2, 3)},
     lambda x, w: em.conv_transpose2d(x, w, stride=2, padding=(2, 3)),
     lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=(2, 3)))
# the phase form (dilation 1, stride > 1): kernel a multiple of the stride, and 3D with groups
_add("conv_transpose2d_k4_s2_phases", {"x": S(2, 5, 7, 9), "w": S(5, 3, 4, 4), "b": S(3)},
     lambda x, w, b: em.conv_transpose2d(x, w, b, stride=2, padding=1),
     lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1))
_add("conv_transpose3d_groups_phases", {"x": S(1, 4, 3, 5, 4), "w": S(4, 3, 3, 2, 3)},
     lambda x, w: C._conv_transpose(x, w, None, (2, 3, 1), (1, 0, 1), (1, 2, 0), 2, 1, 3),
     lambda x, w: F.conv_transpose3d(x, w, stride=(2, 3, 1), padding=(1, 0, 1), output_padding=(1, 2, 0), groups=2))
_add("conv_transpose2d_stride_gt_kernel", {"x": S(1, 2, 3, 4), "w": S(2, 2, 2, 1)},
     lambda x, w: em.conv_transpose2d(x, w, stride=3, output_padding=2),
     lambda x, w: F.conv_transpose2d(x, w, stride=3, output_padding=2))
_add("conv1d_stride_gt_kernel", {"x": S(2, 3, 17), "w": S(2, 3, 2)},
     lambda x, w: em.conv1d(x, w, stride=5, padding=1), lambda x, w: F.conv1d(x, w, stride=5, padding=1))
_add("max_pool1d_kernel_equals_input", {"x": S(2, 3, 5)}, lambda x: em.max_pool1d(x, 5), lambda x: F.max_pool1d(x, 5))
_add("avg_pool2d_ceil_stride1", {"x": S(1, 1, 5, 4)}, lambda x: em.avg_pool2d(x, 2, 1, 1, ceil_mode=True),
     lambda x: F.avg_pool2d(x, 2, 1, 1, ceil_mode=True))
_add("adaptive_avg_pool2d_3d_input", {"x": S(3, 7, 5)}, lambda x: em.adaptive_avg_pool2d(x, (2, 3)),
     lambda x: F.adaptive_avg_pool2d(x, (2, 3)))
_add("nll_loss_unbatched", {"x": S(7), "t": S(dtype="int32", kind="int:0:7")},
     lambda x, t: em.nll_loss(x, t), lambda x, t: F.nll_loss(x, t.long()))
_add("cross_entropy_probs_spatial", {"x": S(2, 5, 3), "t": S(2, 5, 3)},
     lambda x, t: em.cross_entropy(x, t.softmax(1), reduction="none"),
     lambda x, t: F.cross_entropy(x, t.softmax(1), reduction="none"))
_add("layer_norm_size1", {"x": S(3, 1), "w": S(1), "b": S(1)}, lambda x, w, b: em.layer_norm(x, 1, w, b),
     lambda x, w, b: F.layer_norm(x, (1,), w, b))
_add("embedding_scalar_index", {"idx": S(dtype="int32", kind="int:0:5"), "table": S(5, 3)},
     lambda idx, table: em.embedding(idx, table), lambda idx, table: F.embedding(idx, table))

# ================================================================================================
# IEEE special values: NaN, +inf and -inf flow through every op the way torch's do


def _e_special(x):
    return em.where(x > 1.0, math.inf, em.where(x < -1.0, -math.inf, em.where(x.abs() < 0.3, math.nan, x)))


def _t_special(x):
    inf = torch.tensor(math.inf, dtype=x.dtype)
    return torch.where(x > 1.0, inf, torch.where(x < -1.0, -inf, torch.where(x.abs() < 0.3, math.nan, x)))


_SPECIAL_UNARY = {
    "neg_abs_sign": (lambda y: (-y, y.abs(), y.sign()), lambda y: (-y, y.abs(), y.sign())),
    "exp_log_sqrt": (lambda y: (y.exp(), y.log(), y.sqrt(), y.rsqrt()),
                     lambda y: (y.exp(), y.log(), y.sqrt(), y.rsqrt())),
    "activations": (lambda y: (y.relu(), y.sigmoid(), y.tanh(), em.leaky_relu(y, 0.1), em.elu(y), em.hardtanh(y),
                               y.softplus(), em.relu6(y)),
                    lambda y: (y.relu(), y.sigmoid(), y.tanh(), F.leaky_relu(y, 0.1), F.elu(y), F.hardtanh(y),
                               F.softplus(y), F.relu6(y))),
    "gelu_silu": (lambda y: (y.gelu(), em.gelu(y, approximate="tanh"), y.silu()),
                  lambda y: (F.gelu(y), F.gelu(y, approximate="tanh"), F.silu(y))),
    "rounding": (lambda y: (y.floor(), y.ceil(), y.round(), y.trunc()),
                 lambda y: (y.floor(), y.ceil(), y.round(), y.trunc())),
    "predicates": (lambda y: (y.isnan(), y.isinf(), y.isfinite()), lambda y: (y.isnan(), y.isinf(), y.isfinite())),
    "compare_self": (lambda y: (y == y, y != y, y < y, y <= y, y > y, y >= y),
                     lambda y: (y == y, y != y, y < y, y <= y, y > y, y >= y)),
    "compare_scalar": (lambda y: (y < 0.5, y <= 0.5, y > 0.5, y >= 0.5, y == math.inf, y != -math.inf),
                       lambda y: (y < 0.5, y <= 0.5, y > 0.5, y >= 0.5, y == math.inf, y != -math.inf)),
    "clamp": (lambda y: (y.clamp(-0.5, 0.5), y.clamp(min=0.0)), lambda y: (y.clamp(-0.5, 0.5), y.clamp(min=0.0))),
    "pow": (lambda y: (y ** 2, y ** 3, y ** 0.5, y ** -1, y ** 0), lambda y: (y ** 2, y ** 3, y ** 0.5, y ** -1, y ** 0)),
    "remainders": (lambda y: (y.fmod(1.5), y % 1.5), lambda y: (torch.fmod(y, 1.5), y % 1.5)),
    "cast_f16": (lambda y: y.half(), lambda y: y.half()),
}
for _n, (_fe, _ft) in _SPECIAL_UNARY.items():
    _add(f"special_{_n}", {"x": S(5, 13)}, lambda x, _fe=_fe: _fe(_e_special(x * 2)),
         lambda x, _ft=_ft: _ft(_t_special(x * 2)), grad=False)
_add("special_binary", {"x": S(5, 13), "z": S(13)},
     lambda x, z: (_e_special(x * 2).maximum(_e_special(z * 2)), _e_special(x * 2).minimum(z),
                   _e_special(x * 2) + _e_special(z * 2), _e_special(x * 2) * z, em.where(z > 0, _e_special(x), z),
                   z.maximum(_e_special(x * 2)), z.minimum(_e_special(x * 2))),
     lambda x, z: (torch.maximum(_t_special(x * 2), _t_special(z * 2)), torch.minimum(_t_special(x * 2), z),
                   _t_special(x * 2) + _t_special(z * 2), _t_special(x * 2) * z, torch.where(z > 0, _t_special(x), z),
                   torch.maximum(z, _t_special(x * 2)), torch.minimum(z, _t_special(x * 2))), grad=False)
_add("special_reductions", {"x": S(7, 13)},
     lambda x: (_e_special(x * 2).max(1), _e_special(x * 2).min(0), _e_special(x * 2).sum(1),
                _e_special(x * 2).argmax(1), _e_special(x * 2).argmin(0), _e_special(x * 2).mean(0),
                _e_special(x * 2).cumsum(1)),
     lambda x: (_t_special(x * 2).amax(1), _t_special(x * 2).amin(0), _t_special(x * 2).sum(1),
                _t_special(x * 2).argmax(1), _t_special(x * 2).argmin(0), _t_special(x * 2).mean(0),
                _t_special(x * 2).cumsum(1)), grad=False)
_add("neg_inf_softmax_logsumexp", {"x": S(5, 13)},
     lambda x: (em.where(x > 0.5, -math.inf, x).softmax(1), em.where(x > 0.5, -math.inf, x).log_softmax(1),
                em.where(x > -0.5, -math.inf, x).logsumexp(1), em.where(x > 0.5, math.inf, x).logsumexp(1)),
     lambda x: (torch.where(x > 0.5, -math.inf, x).softmax(1), torch.where(x > 0.5, -math.inf, x).log_softmax(1),
                torch.where(x > -0.5, -math.inf, x).logsumexp(1), torch.where(x > 0.5, math.inf, x).logsumexp(1)),
     grad=False)
_add("relu_pow_zero_base", {"x": S(5, 13)},
     lambda x: (x.relu() ** 2.7, x.relu() ** -1.5, x.relu() ** -2, x.relu().sqrt(), x.relu().log()),
     lambda x: (x.relu() ** 2.7, x.relu() ** -1.5, x.relu() ** -2, x.relu().sqrt(), x.relu().log()), grad=False)
_add("max_pool_with_neg_inf", {"x": S(1, 2, 5, 7)}, lambda x: em.max_pool2d(em.where(x > 0, -math.inf, x), 3, 2, 1),
     lambda x: F.max_pool2d(torch.where(x > 0, -math.inf, x), 3, 2, 1), grad=False)

# wide-range half precision: constants inside compositions must not be rounded to the half type
for _dt, _tag in (("float16", "f16"), ("bfloat16", "bf16")):
    # |10 x| < 9: e^9 stays inside float16's range for every seed
    _add(f"exp_wide_{_tag}", {"x": S(5, 13, dtype=_dt, kind="unit")}, lambda x: (x * 10).exp(), lambda x: (x * 10).exp(),
         tags=(_tag,))
    _add(f"pow_general_wide_{_tag}", {"x": S(5, 13, dtype=_dt, kind="positive")}, lambda x: (x * 4) ** 3.3,
         lambda x: (x * 4) ** 3.3, tags=(_tag,))
    _add(f"activations_{_tag}", {"x": S(5, 13, dtype=_dt)},
         lambda x: ((x * 4).sigmoid(), (x * 4).tanh(), em.gelu(x * 4, approximate="tanh"), (x * 4).softplus(),
                    em.elu(x * 4), em.erf(x * 2), em.mish(x * 4), em.logsigmoid(x * 4)),
         lambda x: ((x * 4).sigmoid(), (x * 4).tanh(), F.gelu(x * 4, approximate="tanh"), F.softplus(x * 4),
                    F.elu(x * 4), torch.erf(x * 2), F.mish(x * 4), F.logsigmoid(x * 4)), tags=(_tag,))
    _add(f"logsumexp_cross_entropy_{_tag}", {"x": S(5, 13, dtype=_dt), "t": S(5, dtype="int32", kind="int:0:13")},
         lambda x, t: ((x * 8).logsumexp(1), em.cross_entropy(x * 8, t)),
         lambda x, t: ((x * 8).logsumexp(1), F.cross_entropy(x * 8, t.long())), tags=(_tag,))
    _add(f"trig_log_{_tag}", {"x": S(5, 13, dtype=_dt, kind="positive")},
         lambda x: ((x * 3).sin(), (x * 3).cos(), (x * 50).log(), (x * 0.01).log1p(), (x * 3).expm1()),
         lambda x: ((x * 3).sin(), (x * 3).cos(), (x * 50).log(), (x * 0.01).log1p(), (x * 3).expm1()), tags=(_tag,))

# ================================================================================================
# counter-based random numbers (the PHILOX primitive): the oracle is the Philox4x32-10 of
# ember/primitives/random.py, itself checked against Random123's known-answer vectors (tests/test_random.py)


def _t_rand(shape, seed, offset=0, dtype=None):
    """rand's samples as a torch tensor (float32 unless dtype says otherwise)."""
    from ember.primitives.random import philox_uniform
    n = int(np.prod(shape))
    u = torch.from_numpy(philox_uniform(seed, offset + np.arange(n, dtype=np.int64)).reshape(shape))
    return u.to(dtype or torch.float32)


def _t_dropout(x, p, seed, offset=0):
    keep = _t_rand(tuple(x.shape), seed, offset).float() >= torch.tensor(p, dtype=torch.float32)
    return torch.where(keep, x * (1.0 / (1.0 - p)), torch.zeros((), dtype=x.dtype))


_add("rand_seeds_offsets", {"x": S(5, 13)},
     lambda x: (x + em.rand((5, 13), seed=3), em.rand((3, 1, 7), seed=-9, offset=2**33 + 5),
                em.rand((17,), seed=2**40 + 1, dtype=em.float64)),
     lambda x: (x + _t_rand((5, 13), 3), _t_rand((3, 1, 7), -9, 2**33 + 5), _t_rand((17,), 2**40 + 1, dtype=torch.float64)))
_add("dropout_p03", {"x": S(7, 33)}, lambda x: em.dropout(x, 0.3, seed=11), lambda x: _t_dropout(x, 0.3, 11))
_add("dropout_offset_3d", {"x": S(2, 5, 9)}, lambda x: x.dropout(0.5, seed=123456789012, offset=1000).exp(),
     lambda x: _t_dropout(x, 0.5, 123456789012, 1000).exp())
_add("dropout_f16", {"x": S(5, 13, dtype="float16")}, lambda x: em.dropout(x, 0.25, seed=5),
     lambda x: _t_dropout(x, 0.25, 5), tags=("f16",))
_add("dropout_after_matmul", {"x": S(5, 7), "w": S(7, 3)}, lambda x, w: em.dropout(x @ w, 0.5, seed=2).sum(1),
     lambda x, w: _t_dropout(x @ w, 0.5, 2).sum(1))


def _check_unique() -> None:
    seen = set()
    for c in CASES:
        if c.name in seen:
            raise ValueError(f"duplicate op case name {c.name!r}")
        seen.add(c.name)


_check_unique()
CASES_BY_NAME = {c.name: c for c in CASES}
