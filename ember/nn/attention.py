"""Attention: multi-head attention with separate q/k/v/o projections (Llama / Hugging Face layout:
``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``), grouped-query attention, an optional causal mask and
optional rotary position embeddings.

GQA: with n_kv_heads < n_heads, query head h reads kv head h // (n_heads / n_kv_heads) — consecutive
query heads share a kv head, i.e. torch's ``repeat_interleave(k, groups, dim=1)``.
RoPE: Llama's rotate-half form (frequencies repeated over the two halves of a head), applied to q and
k after the head split.
"""
from __future__ import annotations

import math

from .. import dtypes as dt
from ..ops.attention import rope_cos_sin, rotary_embedding, scaled_dot_product_attention
from ..tensor import ShapeError
from . import init
from .linear import Linear
from .module import Module


class Attention(Module):
    """Attention(dim, n_heads, n_kv_heads=None, head_dim=None, causal=False, rope=False, ...).

    forward(x, attn_mask=None, context=None): x is (B, T, dim); B and T may be symbolic. `context`
    (B, S, dim) makes it cross-attention (keys and values from context). attn_mask is a bool mask
    (True = attend) or an additive float mask broadcastable to (B, n_heads, T, S).
    """

    def __init__(self, dim: int, n_heads: int, n_kv_heads: int | None = None, head_dim: int | None = None,
                 causal: bool = False, rope: bool = False, rope_base: float = 10000.0, bias: bool = False,
                 out_bias: bool | None = None, dtype=dt.float32, seed=None):
        super().__init__()
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if n_heads <= 0 or n_kv_heads <= 0 or n_heads % n_kv_heads:
            raise ValueError(f"Attention: n_heads={n_heads} must be a positive multiple of n_kv_heads={n_kv_heads}")
        if head_dim is None:
            if dim % n_heads:
                raise ValueError(f"Attention: dim={dim} is not divisible by n_heads={n_heads} (pass head_dim)")
            head_dim = dim // n_heads
        if rope and head_dim % 2:
            raise ValueError(f"Attention: rotary embeddings need an even head_dim, got {head_dim}")
        self.dim, self.n_heads, self.n_kv_heads, self.head_dim = dim, n_heads, n_kv_heads, head_dim
        self.causal, self.rope, self.rope_base = causal, rope, rope_base
        rng = init.generator(seed)
        self.q_proj = Linear(dim, n_heads * head_dim, bias=bias, dtype=dtype, seed=rng)
        self.k_proj = Linear(dim, n_kv_heads * head_dim, bias=bias, dtype=dtype, seed=rng)
        self.v_proj = Linear(dim, n_kv_heads * head_dim, bias=bias, dtype=dtype, seed=rng)
        self.o_proj = Linear(n_heads * head_dim, dim, bias=bias if out_bias is None else out_bias, dtype=dtype, seed=rng)

    def _heads(self, t, b, n, h):
        """(B, N, h·hd) -> (B, h, N, hd)"""
        return t.reshape(b, n, h, self.head_dim).transpose(1, 2)

    def forward(self, x, attn_mask=None, context=None):
        self._check(x, "x")
        b, t = x.node.shape[0], x.node.shape[1]
        src = x
        if context is not None:
            if self.rope:
                raise ValueError("Attention: rotary embeddings with a separate context (cross-attention) are "
                                 "not defined here; build it with rope=False")
            self._check(context, "context")
            if context.node.shape[0] is not b:
                raise ShapeError(f"Attention: x {x.shape} and context {context.shape} have different batch sizes")
            src = context
        s = src.node.shape[1]
        q = self._heads(self.q_proj(x), b, t, self.n_heads)
        k = self._heads(self.k_proj(src), b, s, self.n_kv_heads)
        v = self._heads(self.v_proj(src), b, s, self.n_kv_heads)
        if self.rope:
            cos, sin = rope_cos_sin(t, self.head_dim, self.rope_base)
            q, k = rotary_embedding(q, cos, sin), rotary_embedding(k, cos, sin)
        o = scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=self.causal,
                                         scale=1.0 / math.sqrt(self.head_dim), enable_gqa=True)
        o = o.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim)
        return self.o_proj(o)

    def _check(self, x, what: str) -> None:
        if x.ndim != 3 or x.shape[-1] != self.dim:
            raise ShapeError(f"Attention expects {what} of shape (B, T, {self.dim}), got {x.shape}")

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, head_dim={self.head_dim}, "
                f"causal={self.causal}, rope={self.rope}")
