"""Scaled dot-product attention (causal masks, GQA) and rotary position embeddings."""
from __future__ import annotations

import math

from .. import dtypes as dt
from .. import graph as g
from .. import symbolic as sm
from ..tensor import ShapeError, Tensor, arange, iota, where

__all__ = ["scaled_dot_product_attention", "rotary_embedding", "rope_cos_sin", "repeat_kv"]


def repeat_kv(x: Tensor, groups: int) -> Tensor:
    """(B, Hkv, S, D) -> (B, Hkv*groups, S, D), each kv head shared by `groups` query heads (a view)."""
    if groups == 1:
        return x
    b, h, s, d = x.node.shape
    return x.unsqueeze(2).broadcast_to((b, h, groups, s, d)).reshape((b, h * groups, s, d))


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q kᵀ · scale + mask) v over (..., heads, L, D) tensors, as torch's SDPA.

    is_causal masks key j > query i (top-left aligned, as torch). A query row whose mask allows no key
    outputs zeros, as torch's. With fewer kv heads than query heads
    (GQA), kv heads are shared by consecutive query heads; torch requires enable_gqa=True for that.
    """
    if dropout_p:  # the parameter exists so that torch's positional order means the same here
        raise NotImplementedError(f"attention dropout (dropout_p={dropout_p}) is not supported; pass 0.0")
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ShapeError(f"attention expects q, k, v of equal rank >= 2, got {q.shape}, {k.shape}, {v.shape}")
    if q.node.shape[-1] is not k.node.shape[-1]:
        raise ShapeError(f"attention: q and k head dims differ ({q.shape[-1]} vs {k.shape[-1]})")
    if q.ndim >= 3 and k.node.shape[-3] is not q.node.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if not (isinstance(hq, int) and isinstance(hk, int) and hq % hk == 0):
            raise ShapeError(f"attention: {hq} query heads cannot share {hk} kv heads")
        if q.ndim != 4:
            raise ShapeError("grouped-query attention expects (B, H, L, D) tensors")
        k, v = repeat_kv(k, hq // hk), repeat_kv(v, hq // hk)
    d = q.shape[-1]
    if scale is None:
        if not isinstance(d, int):
            raise ShapeError("attention with a symbolic head dim needs an explicit scale")
        scale = 1.0 / math.sqrt(d)
    s = q.matmul(k.transpose(-1, -2)) * scale
    L, S = s.node.shape[-2], s.node.shape[-1]
    if is_causal:
        allowed = iota((L, S), 1) <= iota((L, S), 0)
        s = where(allowed, s, -math.inf)
    if attn_mask is None:
        return s.softmax(-1).cast(v.dtype).matmul(v)
    bias = where(attn_mask, 0.0, -math.inf) if attn_mask.dtype.is_bool else attn_mask
    s = where(attn_mask, s, -math.inf) if attn_mask.dtype.is_bool else s + attn_mask
    if is_causal:
        bias = where(allowed, bias, -math.inf)
    # A query row that may attend to no key gets a zero output (torch's SDPA), not 0/0 = NaN. Whether
    # a row has a key is read from the mask alone (finite scores do not change it), at the mask's own
    # (often broadcast) shape; the guard is then a per-row value applied to the scores (so that no NaN
    # reaches the gradient either) and to the product's rows, and the softmax and the product stay in
    # online-softmax form: one streamed kernel (kernel/online.py) instead of the scores in memory.
    live = bias.max(-1, keepdim=True) > -math.inf
    p = where(live, s, 0.0).softmax(-1)
    return where(live, p.cast(v.dtype).matmul(v), 0.0)


def rope_cos_sin(seq_len, head_dim: int, base: float = 10000.0, offset=0, dtype=dt.float32):
    """cos and sin tables of shape (seq_len, head_dim) for Llama-style rotary embeddings
    (frequencies repeated over the two halves), built in the graph from iota. `offset` (an int, a
    dimension name or a 0-d integer tensor) is the position of the first row, e.g. a KV-cache length."""
    if head_dim % 2:
        raise ShapeError(f"rotary embeddings need an even head dim, got {head_dim}")
    half = head_dim // 2
    inv_freq = (arange(0, half).cast(dt.float32) * (-2.0 * math.log(base) / head_dim)).exp()
    shape = (sm.sym(seq_len), sm.sym(half))
    first = 0 if isinstance(offset, Tensor) else offset
    pos = Tensor(g.iota_node(shape, sm.index_var("_i0", shape[0]) + sm.sym(first), dt.int32)).cast(dt.float32)
    if isinstance(offset, Tensor):
        pos = pos + offset.cast(dt.float32)
    ang = pos * inv_freq.reshape(1, half)
    from .movement import concat
    ang = concat([ang, ang], -1)
    return ang.cos().cast(dtype), ang.sin().cast(dtype)


def rotary_embedding(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False) -> Tensor:
    """x * cos + rotate(x) * sin over the last axis. rotate_half (Llama/HF): (-x2, x1) on the halves;
    interleaved (GPT-J): (-x_odd, x_even) on pairs. cos/sin broadcast against x (e.g. (T, D))."""
    d = x.shape[-1]
    if not isinstance(d, int) or d % 2:
        raise ShapeError(f"rotary embedding needs a static even last dim, got {d}")
    if interleaved:
        pairs = x.reshape(list(x.node.shape[:-1]) + [d // 2, 2])
        x1, x2 = pairs[..., 0], pairs[..., 1]
        from .movement import stack
        rot = stack([-x2, x1], -1).reshape(x.node.shape)
    else:
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        from .movement import concat
        rot = concat([-x2, x1], -1)
    return x * cos.cast(x.dtype) + rot * sin.cast(x.dtype)
