"""Op cases: the rest of the Tensor API (less common elementwise math, losses, helpers), 0-d
tensors and size-1 axes."""
from __future__ import annotations

import ember as em
from ember.ops import conv as C

from tests.op_cases.registry import F, S, case_adder, e_special, t_special, torch

CASES: list = []
_add = case_adder(CASES)

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
     lambda x: (e_special(x * 2).log1p(), e_special(x * 2).expm1(), (x.clamp(-2, 2) * 40).expm1(), (x.abs() * 1e30).log1p()),
     lambda x: (t_special(x * 2).log1p(), t_special(x * 2).expm1(), (x.clamp(-2, 2) * 40).expm1(), (x.abs() * 1e30).log1p()),
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
