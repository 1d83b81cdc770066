"""Op cases: attention and rotary embeddings."""
from __future__ import annotations

import math

import ember as em

from tests.op_cases.registry import F, S, case_adder, e_mask, t_mask, t_rope_tables, t_rotate, torch

CASES: list = []
_add = case_adder(CASES)

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
     lambda q, k, v, m: em.scaled_dot_product_attention(q, k, v, attn_mask=e_mask(m, 7)),
     lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=t_mask(m, 7)))
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
     lambda x, cos, sin: x * cos + t_rotate(x, False) * sin)
_add("rotary_interleaved", {"x": S(2, 3, 5, 6), "cos": S(5, 6), "sin": S(5, 6)},
     lambda x, cos, sin: em.rotary_embedding(x, cos, sin, interleaved=True),
     lambda x, cos, sin: x * cos + t_rotate(x, True) * sin)
_add("rotary_tables", {"x": S(1, 2, 7, 6)},
     lambda x: em.rotary_embedding(x, *em.rope_cos_sin(7, 6)),
     lambda x: x * t_rope_tables(7, 6, dtype=x.dtype)[0] + t_rotate(x, False) * t_rope_tables(7, 6, dtype=x.dtype)[1])
_add("rotary_tables_offset_base", {"x": S(1, 2, 5, 10)},
     lambda x: em.rotary_embedding(x, *em.rope_cos_sin(5, 10, base=500.0, offset=3)),
     lambda x: (x * t_rope_tables(5, 10, 500.0, 3, x.dtype)[0]
                + t_rotate(x, False) * t_rope_tables(5, 10, 500.0, 3, x.dtype)[1]))
