"""Op cases: elementwise arithmetic, comparisons, unary math and activations, pow, rounding and remainders."""
from __future__ import annotations

import ember as em

from tests.op_cases.registry import F, S, case_adder, torch

CASES: list = []
_add = case_adder(CASES)

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
