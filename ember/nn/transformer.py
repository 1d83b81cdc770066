"""A Llama-style decoder: DecoderBlock (pre-norm attention and SwiGLU, each with a residual) and a
tiny Transformer language model (embedding, N blocks, final RMSNorm, lm head) for demos and
benchmarks.

Parameter names follow Hugging Face's Llama (``embed_tokens``, ``layers.N.self_attn.q_proj``,
``input_layernorm``, ``post_attention_layernorm``, ``mlp.gate_proj``, ``norm``, ``lm_head``), so a
LlamaForCausalLM state_dict loads after stripping its leading "model." (load_state_dict's error
message suggests exactly that).
"""
from __future__ import annotations

from .. import dtypes as dt
from ..tensor import ShapeError
from . import init
from .attention import Attention
from .container import ModuleList
from .embedding import Embedding
from .linear import Linear
from .mlp import SwiGLU
from .module import Module
from .norm import RMSNorm


def llama_hidden_dim(dim: int, multiple_of: int = 32) -> int:
    """Llama's SwiGLU width: 2/3 of 4·dim (keeping the parameter count of a 4·dim MLP), rounded up."""
    h = int(2 * 4 * dim / 3)
    return multiple_of * ((h + multiple_of - 1) // multiple_of)


class DecoderBlock(Module):
    """x + attn(norm(x)), then h + mlp(norm(h)); causal attention with RoPE and GQA."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads: int | None = None, hidden_dim: int | None = None,
                 norm_eps: float = 1e-5, rope_base: float = 10000.0, dtype=dt.float32, seed=None):
        super().__init__()
        rng = init.generator(seed)
        self.input_layernorm = RMSNorm(dim, eps=norm_eps, dtype=dtype)
        self.self_attn = Attention(dim, n_heads, n_kv_heads, causal=True, rope=True, rope_base=rope_base,
                                   dtype=dtype, seed=rng)
        self.post_attention_layernorm = RMSNorm(dim, eps=norm_eps, dtype=dtype)
        self.mlp = SwiGLU(dim, hidden_dim or llama_hidden_dim(dim), dtype=dtype, seed=rng)

    def forward(self, x, attn_mask=None):
        h = x + self.self_attn(self.input_layernorm(x), attn_mask=attn_mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class Transformer(Module):
    """tokens (B, T) int -> logits (B, T, vocab_size). tie_embeddings shares the embedding table with
    the lm head (one Parameter, one graph node; both keys appear in state_dict, as in torch)."""

    def __init__(self, vocab_size: int, dim: int, n_layers: int, n_heads: int, n_kv_heads: int | None = None,
                 hidden_dim: int | None = None, norm_eps: float = 1e-5, rope_base: float = 10000.0,
                 tie_embeddings: bool = False, dtype=dt.float32, seed=None):
        super().__init__()
        rng = init.generator(seed)
        self.vocab_size, self.dim, self.n_layers = vocab_size, dim, n_layers
        self.embed_tokens = Embedding(vocab_size, dim, dtype=dtype, seed=rng)
        self.layers = ModuleList(DecoderBlock(dim, n_heads, n_kv_heads, hidden_dim, norm_eps, rope_base, dtype, rng)
                                 for _ in range(n_layers))
        self.norm = RMSNorm(dim, eps=norm_eps, dtype=dtype)
        self.lm_head = Linear(dim, vocab_size, bias=False, dtype=dtype, seed=rng)
        if tie_embeddings:
            self.lm_head.weight = self.embed_tokens.get_parameter("weight")

    def forward(self, tokens):
        if tokens.ndim != 2:
            raise ShapeError(f"Transformer expects tokens of shape (B, T), got {tokens.shape}")
        h = self.embed_tokens(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))
