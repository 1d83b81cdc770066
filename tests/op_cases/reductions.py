"""Op cases: reductions over any axes (keepdim, negative axes), the softmax family, cumsum and cumprod."""
from __future__ import annotations

import math

import ember as em

from tests.op_cases.registry import S, case_adder, e_special, t_prod, t_special, torch

CASES: list = []
_add = case_adder(CASES)

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
         lambda x, a=_ax, k=_kd: t_prod(x, a, k))
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
     lambda x: e_special(x * 1.5).prod(1), lambda x: t_special(x * 1.5).prod(1), grad=False)
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
# cumprod: a magnitude scan of log2|x| and a sign scan (ops/reduce.py)
_add("cumprod_last", {"x": S(3, 40)}, lambda x: x.cumprod(-1), lambda x: x.cumprod(-1))
_add("cumprod_blocked_middle", {"x": S(2, 70, 3)}, lambda x: (x * 0.5 + 1).cumprod(1), lambda x: (x * 0.5 + 1).cumprod(1))
