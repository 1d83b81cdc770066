"""The decoder graph of one generation step, built from Ember's own ops from a ModelConfig.

One step reads `T` new tokens per sequence (a prompt chunk, or 1 when decoding) at slots
[P, P + T) of the KV cache, writes their keys and values there in place (em.state_write), attends
over slots [0, P + T), and returns the logits of the last new token. P and T are named dimensions
(T is the constant 1 for the decode program), so one compiled prefill program and one decode
program serve every position and prompt length.

Batches are left-padded: sequence b's tokens start at slot `start[b]`. Its rotary positions are
given per token (`positions`), and its queries attend to slots >= start[b] (plus their own slot,
so a pad row stays finite and its garbage never reaches a real row through 0 * NaN).

Numerics follow transformers' eager Llama: RMSNorm in float32 with the weight applied after the
cast back, cos/sin in float32 cast to the model dtype, softmax in float32."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..graph import iota_node
from .. import symbolic as sm
from ..ops.attention import rotary_embedding
from ..ops.collective import all_gather, all_reduce
from ..ops.indexing import embedding
from ..ops.state import narrow_to, state_write
from ..tensor import Tensor, input, iota, tensor, where
from .checkpoint import Checkpoint
from .config import ConfigError, ModelConfig


class Weights:
    """The model's parameters as Ember constants (made once, shared by the prefill and decode
    graphs, so their programs share one copy).

    With `world` > 1 they are rank `rank`'s shard, Megatron's way (docs/distributed.md): q/k/v, gate
    and up split by output rows (whole heads: `heads` and `kv_heads` per rank), o and down by input
    columns (their products all-reduced), the embedding and the LM head by vocabulary rows (`vocab`
    per rank, the last shard padded with zero rows)."""

    def __init__(self, cfg: ModelConfig, ckpt: Checkpoint, max_seq: int, dtype: dt.DType, rank: int = 0,
                 world: int = 1, groups: int = 1):
        # groups > 1 (with world 1): the whole model laid out for ember.sharding to split over `groups`
        # ranks: q/k/v concatenated group by group (a row block of the concatenation is one rank's
        # heads), the vocabulary padded to a multiple of `groups`
        self.cfg, self.dtype, self.rank, self.world, self.groups = cfg, dtype, rank, world, groups
        ranks = max(world, groups)
        for what, n in (("attention heads", cfg.heads), ("kv heads", cfg.kv_heads), ("the MLP width", cfg.ffn)):
            if n % ranks:
                raise ConfigError(f"tensor parallelism over {ranks} ranks splits {what} ({n}) evenly: use a "
                                  f"divisor of {n}")
        Hkv, D, E, F = cfg.kv_heads, cfg.head_dim, cfg.hidden, cfg.ffn
        self.heads, self.kv_heads = cfg.heads // world, Hkv // world
        self.vocab = -(-cfg.vocab // world) if world > 1 else -(-cfg.vocab // groups) * groups

        def rows(a, n_local, axis=0, block=rank):  # block `block` of n_local along axis (zero-padded at the end)
            lo = block * n_local
            part = np.take(a, np.arange(lo, min(lo + n_local, a.shape[axis])), axis=axis)
            if part.shape[axis] < n_local:
                pad = [(0, 0)] * a.ndim
                pad[axis] = (0, n_local - part.shape[axis])
                part = np.pad(part, pad)
            return np.ascontiguousarray(part)

        def w(name, shape, split=None):  # split: (axis, size per rank), None: replicated
            a = ckpt.get(name, shape)
            if split is not None and world > 1:
                a = rows(a, split[1], split[0])
            return tensor(a, name=name)

        def cat(names, shapes, name):  # q, k and v as one projection: one GEMV / GEMM, not three
            parts = [ckpt.get(n, sh) for n, sh in zip(names, shapes)]
            per = [cfg.heads * D // ranks, Hkv * D // ranks, Hkv * D // ranks]
            blocks = [rank] if world > 1 else range(groups)
            return tensor(np.concatenate([rows(a, k, 0, g) for g in blocks for a, k in zip(parts, per)]), name=name)

        vocab = (0, self.vocab)
        padded = world > 1 or self.vocab != cfg.vocab  # (rows() pads the one block of a whole padded table)
        self.embed = w("model.embed_tokens.weight", (cfg.vocab, E), vocab) if world > 1 else \
            tensor(rows(ckpt.get("model.embed_tokens.weight", (cfg.vocab, E)), self.vocab, 0, 0) if padded else
                   ckpt.get("model.embed_tokens.weight", (cfg.vocab, E)), name="model.embed_tokens.weight")
        if cfg.tied or "lm_head.weight" not in ckpt:
            self.lm_head = self.embed
        elif world > 1:
            self.lm_head = w("lm_head.weight", (cfg.vocab, E), vocab)
        else:
            a = ckpt.get("lm_head.weight", (cfg.vocab, E))
            self.lm_head = tensor(rows(a, self.vocab, 0, 0) if padded else a, name="lm_head.weight")
        self.norm = w("model.norm.weight", (E,))
        self.layers = []
        hd, Fl = self.heads * D, F // world
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            a = p + "self_attn."
            L = {
                "in_norm": w(p + "input_layernorm.weight", (E,)),
                "post_norm": w(p + "post_attention_layernorm.weight", (E,)),
                "qkv": cat([a + f"{x}_proj.weight" for x in "qkv"], [(cfg.heads * D, E), (Hkv * D, E), (Hkv * D, E)],
                           a + "qkv_proj.weight"),
                "o": w(a + "o_proj.weight", (E, cfg.heads * D), (1, hd)),
                "gate": w(p + "mlp.gate_proj.weight", (F, E), (0, Fl)),
                "up": w(p + "mlp.up_proj.weight", (F, E), (0, Fl)),
                "down": w(p + "mlp.down_proj.weight", (E, F), (1, Fl)),
            }
            if cfg.qkv_bias:
                L["qkv_b"] = cat([a + f"{x}_proj.bias" for x in "qkv"], [(cfg.heads * D,), (Hkv * D,), (Hkv * D,)],
                                 a + "qkv_proj.bias")
            if cfg.o_bias:
                L["o_b"] = w(a + "o_proj.bias", (E,))
            if cfg.mlp_bias:
                L["gate_b"] = w(p + "mlp.gate_proj.bias", (F,), (0, Fl))
                L["up_b"] = w(p + "mlp.up_proj.bias", (F,), (0, Fl))
                L["down_b"] = w(p + "mlp.down_proj.bias", (E,))
            if cfg.qk_norm:
                L["q_norm"], L["k_norm"] = w(a + "q_norm.weight", (D,)), w(a + "k_norm.weight", (D,))
            self.layers.append(L)
        self._scaled: dict = {}
        # rotary tables for every slot, float32 as transformers computes them (cos/sin of pos * inv_freq)
        inv = np.asarray(cfg.inv_freq, np.float32)
        ang = np.arange(max_seq, dtype=np.float32)[:, None] * inv[None, :]
        ang = np.concatenate([ang, ang], -1)
        self.cos = tensor((np.cos(ang) * cfg.rope_scale).astype(np.float32), name="rope_cos")
        self.sin = tensor((np.sin(ang) * cfg.rope_scale).astype(np.float32), name="rope_sin")


def norm_scaled(W: Weights, i: int, proj: str, norm: str) -> Tensor:
    """Layer i's projection `proj` ([out, in]) with its input columns multiplied by the RMSNorm weight
    `norm` that scales its input: norm(x) * g @ P^T = norm(x) @ (P * g)^T. Computed once (float32,
    rounded to the weights' dtype) and kept."""
    key = (i, proj, norm)
    if key not in W._scaled:
        P, G = W.layers[i][proj].node.arg, W.layers[i][norm].node.arg
        a = (np.asarray(P.array, np.float32) * np.asarray(G.array, np.float32)[None, :]).astype(P.array.dtype)
        W._scaled[key] = tensor(a, name=f"{P.name}*{G.name}")
    return W._scaled[key]


def _linear(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    y = x @ w.transpose(0, 1)
    return y if b is None else y + b


def _rms(x: Tensor, w: Tensor | None, eps: float) -> Tensor:
    xf = x.cast(dt.float32)
    y = xf * ((xf * xf).mean(-1, keepdim=True) + eps).rsqrt()
    return y.cast(x.dtype) if w is None else w * y.cast(x.dtype)


def cache_shape(cfg: ModelConfig, batch: int, max_seq: int, world: int = 1) -> tuple:
    """A layer's K (or V) cache on one rank: its kv heads only."""
    return (batch, cfg.kv_heads // world, max_seq, cfg.head_dim)


def _reduced(y: Tensor, W: Weights, b: Tensor | None = None) -> Tensor:
    """A row-parallel product made whole (summed over the ranks), then its bias (added once)."""
    y = all_reduce(y, W.world) if W.world > 1 else y
    return y if b is None else y + b


def _embed(tokens: Tensor, W: Weights) -> Tensor:
    """Vocab-parallel embedding: each rank looks up the tokens in its rows, zero elsewhere, summed."""
    if W.world == 1:
        return embedding(tokens, W.embed)
    local = tokens - W.rank * W.vocab
    mine = (local >= 0) & (local < W.vocab)
    x = embedding(where(mine, local, 0), W.embed)
    return all_reduce(where(mine.unsqueeze(-1), x, 0.0), W.world)


def build_step(W: Weights, batch: int, T, max_seq: int, scale_weights: bool = False):
    """Graph of one step: returns (outputs {"logits", "next"}, state writes). Inputs: `tokens`
    (B, T) int32, `positions` (B, T) int32 (rotary positions), `start` (B,) int32 (first slot of each
    sequence), caches `k{i}` / `v{i}` (B, Hkv, max_seq, D); dims P (slots already filled) and T.
    `scale_weights`: each layer's RMSNorm weights multiplied into the projections that read the norm
    (`norm_scaled`: qkv, gate, up), the norm left unscaled — exact in real arithmetic, one rounding of
    the product in the weights' dtype instead of one of the scaled activations; what lets a GEMV that
    recomputes the norm (Target.fold_norms) read nothing but x and its weights."""
    cfg, dtype = W.cfg, W.dtype
    B, D, Hq, Hkv = batch, cfg.head_dim, W.heads, W.kv_heads  # this rank's heads
    groups = W.groups if W.world == 1 else 1
    P = sm.dim("P")
    Tn = sm.sym(T)
    tokens = input("tokens", (B, T), dt.int32)
    positions = input("positions", (B, T), dt.int32)
    start = input("start", (B,), dt.int32)
    x = _embed(tokens, W)  # (B, T, E)
    cos = embedding(positions, W.cos).cast(dtype).unsqueeze(1)  # (B, 1, T, D)
    sin = embedding(positions, W.sin).cast(dtype).unsqueeze(1)
    n = P + Tn  # keys attended: slots [0, P + T)
    key = iota((B, 1, 1, T, n), 4)
    query_slot = iota((B, 1, 1, T, n), 3) + Tensor(iota_node((), P, dt.int32))  # slot of query i: P + i
    first = start.reshape(B, 1, 1, 1, 1)
    # keys [start, own slot]; a pad query (its slot before start) sees only its own slot. Written as
    # key >= min(start, slot) so the attention kernels find the rows' first key (kernel/online.py
    # key_floor) and align their key tiles to it: the same tiles wherever a sequence starts
    allowed = (key <= query_slot) & (key >= first.minimum(query_slot))
    scale = 1.0 / math.sqrt(D)
    writes = []
    for i, L in enumerate(W.layers):
        h = _rms(x, None if scale_weights else L["in_norm"], cfg.eps)
        # (B, T, (Hq + 2 Hkv) D), in groups of [q k v] heads
        qkv = _linear(h, norm_scaled(W, i, "qkv", "in_norm") if scale_weights else L["qkv"], L.get("qkv_b"))
        gq, gk = Hq // groups * D, Hkv // groups * D
        qkv = qkv.reshape(B, T, groups, gq + 2 * gk)
        q = qkv[..., :gq].reshape(B, T, Hq, D)
        k = qkv[..., gq: gq + gk].reshape(B, T, Hkv, D)
        v = qkv[..., gq + gk:].reshape(B, T, Hkv, D)
        if cfg.qk_norm:
            q, k = _rms(q, L["q_norm"], cfg.eps), _rms(k, L["k_norm"], cfg.eps)
        q = rotary_embedding(q.transpose(1, 2), cos, sin)  # (B, Hq, T, D)
        k = rotary_embedding(k.transpose(1, 2), cos, sin)
        v = v.transpose(1, 2)
        kc = input(f"k{i}", cache_shape(cfg, B, max_seq, W.world), dtype)
        vc = input(f"v{i}", cache_shape(cfg, B, max_seq, W.world), dtype)
        wk, wv = state_write(kc, k, 2, P), state_write(vc, v, 2, P)
        writes += [wk, wv]
        # grouped-query attention without repeating the cache: the G query heads sharing a kv head
        # are one batch of G rows (B, Hkv, G, T, .) against that head's keys broadcast over G (a
        # stride-0 view; repeat_kv's reshape would put a division by the symbolic length in the index)
        G = cfg.groups
        keys = narrow_to(wk.updated, 2, n).unsqueeze(2)  # (B, Hkv, 1, P + T, D)
        vals = narrow_to(wv.updated, 2, n).unsqueeze(2)
        q5 = q.reshape(B, Hkv, G, T, D)
        s = (q5 @ keys.transpose(-1, -2)).cast(dt.float32) * scale  # (B, Hkv, G, T, P + T)
        s = where(allowed, s, -math.inf)
        p = s.softmax(-1).cast(dtype)
        # P @ v computed straight into (B, T, Hkv, G, D): merged to (B, T, Hq * D) without a
        # transpose, the o projection reads its rows as one strided run (a TMA tensor map)
        o = (p.permute(0, 3, 1, 2, 4) @ vals.permute(0, 2, 1, 3, 4)).reshape(B, T, Hq * D)
        x = x + _reduced(_linear(o, L["o"]), W, L.get("o_b"))
        h = _rms(x, None if scale_weights else L["post_norm"], cfg.eps)
        g = _linear(h, norm_scaled(W, i, "gate", "post_norm") if scale_weights else L["gate"], L.get("gate_b"))
        u = _linear(h, norm_scaled(W, i, "up", "post_norm") if scale_weights else L["up"], L.get("up_b"))
        x = x + _reduced(_linear(g.silu() * u, L["down"]), W, L.get("down_b"))
    last = narrow_last(x, Tn)  # (B, E): only the last new token's logits are needed
    logits = _linear(_rms(last, W.norm, cfg.eps), W.lm_head).cast(dt.float32)
    if W.world > 1:  # vocab-parallel logits: gathered whole on every rank (each samples the same token)
        logits = all_gather(logits, -1, W.world)[:, : cfg.vocab]
    elif W.vocab != cfg.vocab:  # (the padding rows of a table laid out for ember.sharding)
        logits = logits[:, : cfg.vocab]
    return {"logits": logits, "next": logits.argmax(-1).cast(dt.int32)}, writes


def narrow_last(x: Tensor, T) -> Tensor:
    """x[:, T - 1] for a (B, T, E) tensor whose T may be a named dimension."""
    from ..ops.movement import _slice_axis
    return _slice_axis(x, 1, T - 1, T, 1).reshape(x.node.shape[0], x.node.shape[2])
