"""Op cases: IEEE special values (NaN, ±inf) through every op, and wide-range half precision."""
from __future__ import annotations

import math

import ember as em

from tests.op_cases.registry import F, S, case_adder, e_special, t_special, torch

CASES: list = []
_add = case_adder(CASES)

# IEEE special values: NaN, +inf and -inf flow through every op the way torch's do

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
    _add(f"special_{_n}", {"x": S(5, 13)}, lambda x, _fe=_fe: _fe(e_special(x * 2)),
         lambda x, _ft=_ft: _ft(t_special(x * 2)), grad=False)
_add("special_binary", {"x": S(5, 13), "z": S(13)},
     lambda x, z: (e_special(x * 2).maximum(e_special(z * 2)), e_special(x * 2).minimum(z),
                   e_special(x * 2) + e_special(z * 2), e_special(x * 2) * z, em.where(z > 0, e_special(x), z),
                   z.maximum(e_special(x * 2)), z.minimum(e_special(x * 2))),
     lambda x, z: (torch.maximum(t_special(x * 2), t_special(z * 2)), torch.minimum(t_special(x * 2), z),
                   t_special(x * 2) + t_special(z * 2), t_special(x * 2) * z, torch.where(z > 0, t_special(x), z),
                   torch.maximum(z, t_special(x * 2)), torch.minimum(z, t_special(x * 2))), grad=False)
_add("special_reductions", {"x": S(7, 13)},
     lambda x: (e_special(x * 2).max(1), e_special(x * 2).min(0), e_special(x * 2).sum(1),
                e_special(x * 2).argmax(1), e_special(x * 2).argmin(0), e_special(x * 2).mean(0),
                e_special(x * 2).cumsum(1)),
     lambda x: (t_special(x * 2).amax(1), t_special(x * 2).amin(0), t_special(x * 2).sum(1),
                t_special(x * 2).argmax(1), t_special(x * 2).argmin(0), t_special(x * 2).mean(0),
                t_special(x * 2).cumsum(1)), grad=False)
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
