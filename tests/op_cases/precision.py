"""Op cases: casts, and half-precision variants of the main ops."""
from __future__ import annotations

import ember as em

from tests.op_cases.registry import F, S, case_adder, torch

CASES: list = []
_add = case_adder(CASES)

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
