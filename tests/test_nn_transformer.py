"""ember.nn's attention, decoder block and Llama-style transformer against a PyTorch reference
written out here, given the same weights and inputs (static and symbolic batch and sequence)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

import ember as em  # noqa: E402
from ember import nn  # noqa: E402
from tests.conftest import SEEDS, assert_close  # noqa: E402
from tests.nn_checks import compare, data_names, randomize  # noqa: E402


def torch_rope(t: int, hd: int, base: float):
    inv = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.outer(torch.arange(t, dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], -1)
    return emb.cos().float(), emb.sin().float()


def rotate_half(x):
    d = x.shape[-1]
    return torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1)


class TorchAttention(torch.nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads=None, head_dim=None, causal=False, rope=False, rope_base=10000.0,
                 bias=False):
        super().__init__()
        self.h, self.hkv = n_heads, n_kv_heads or n_heads
        self.hd = head_dim or dim // n_heads
        self.causal, self.rope, self.base = causal, rope, rope_base
        self.q_proj = torch.nn.Linear(dim, self.h * self.hd, bias=bias)
        self.k_proj = torch.nn.Linear(dim, self.hkv * self.hd, bias=bias)
        self.v_proj = torch.nn.Linear(dim, self.hkv * self.hd, bias=bias)
        self.o_proj = torch.nn.Linear(self.h * self.hd, dim, bias=bias)

    def forward(self, x, attn_mask=None, context=None):
        b, t, _ = x.shape
        src = x if context is None else context
        s = src.shape[1]
        q = self.q_proj(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(src).view(b, s, self.hkv, self.hd).transpose(1, 2)
        v = self.v_proj(src).view(b, s, self.hkv, self.hd).transpose(1, 2)
        if self.rope:
            cos, sin = torch_rope(t, self.hd, self.base)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.h // self.hkv, dim=1)
        v = v.repeat_interleave(self.h // self.hkv, dim=1)
        o = TF.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=self.causal)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, self.h * self.hd))


class TorchRMSNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps, self.weight = eps, torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class TorchSwiGLU(torch.nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = torch.nn.Linear(dim, hidden, bias=False)  # w1
        self.up_proj = torch.nn.Linear(dim, hidden, bias=False)    # w3
        self.down_proj = torch.nn.Linear(hidden, dim, bias=False)  # w2

    def forward(self, x):
        return self.down_proj(TF.silu(self.gate_proj(x)) * self.up_proj(x))


class TorchBlock(torch.nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden, eps=1e-5, base=10000.0):
        super().__init__()
        self.input_layernorm = TorchRMSNorm(dim, eps)
        self.self_attn = TorchAttention(dim, n_heads, n_kv_heads, causal=True, rope=True, rope_base=base)
        self.post_attention_layernorm = TorchRMSNorm(dim, eps)
        self.mlp = TorchSwiGLU(dim, hidden)

    def forward(self, x):
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


class TorchTransformer(torch.nn.Module):
    def __init__(self, vocab, dim, n_layers, n_heads, n_kv_heads, hidden, tie=False):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList(TorchBlock(dim, n_heads, n_kv_heads, hidden) for _ in range(n_layers))
        self.norm = TorchRMSNorm(dim, 1e-5)
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False)
        if tie:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, tokens):
        h = self.embed_tokens(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))


ATTN_CASES = [
    dict(dim=24, n_heads=4, n_kv_heads=2, causal=True, rope=True),           # GQA + RoPE + causal
    dict(dim=20, n_heads=5, causal=False, rope=False, bias=True),             # plain MHA with biases
    dict(dim=16, n_heads=4, n_kv_heads=1, causal=True, rope=True, rope_base=500.0),  # MQA
    dict(dim=12, n_heads=3, n_kv_heads=3, head_dim=6, causal=False, rope=True),  # head_dim != dim/heads
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("cfg", ATTN_CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_attention_matches_torch(cfg, seed):
    em_mod, th_mod = nn.Attention(**cfg), randomize(TorchAttention(**cfg), seed)
    x = np.random.default_rng(seed).standard_normal((2, 7, cfg["dim"])).astype(np.float32)
    compare(em_mod, th_mod, x)


def test_attention_mask_and_cross_attention_match_torch():
    em_mod, th_mod = nn.Attention(12, 4, 2), randomize(TorchAttention(12, 4, 2), 0)
    em_mod.load_state_dict(th_mod.state_dict())
    rng = np.random.default_rng(0)
    x, ctx = rng.standard_normal((2, 5, 12)).astype(np.float32), rng.standard_normal((2, 3, 12)).astype(np.float32)
    mask = rng.random((5, 3)) < 0.6
    mask[:, 0] = True  # every query attends somewhere (an all-masked row is NaN in both)
    out = em.reference(em_mod(em.input("x", x.shape), attn_mask=em.tensor(mask.copy()), context=em.input("c", ctx.shape)),
                       x=x, c=ctx)
    with torch.no_grad():
        ref = th_mod(torch.from_numpy(x), attn_mask=torch.from_numpy(mask), context=torch.from_numpy(ctx))
    assert_close(out, ref.numpy())


@pytest.mark.parametrize("seed", SEEDS)
def test_decoder_block_symbolic_batch_and_sequence(seed):
    em_mod = nn.DecoderBlock(64, n_heads=8, n_kv_heads=2, hidden_dim=96)
    th_mod = randomize(TorchBlock(64, 8, 2, 96), seed)
    em_mod.load_state_dict(th_mod.state_dict())
    y = em_mod(em.input("x", ("B", "T", 64)))  # one graph, run at two sizes
    assert tuple(str(d) for d in y.shape) == ("B", "T", "64")
    rng = np.random.default_rng(seed)
    for b, t in [(2, 7), (3, 4)]:
        x = rng.standard_normal((b, t, 64)).astype(np.float32)
        with torch.no_grad():
            ref = th_mod(torch.from_numpy(x))
        assert_close(em.reference(y, x=x), ref.numpy(), what=f"B={b} T={t}")


@pytest.mark.parametrize("tie", [False, True])
def test_transformer_matches_torch_at_two_sizes(tie):
    em_mod = nn.Transformer(50, 32, n_layers=2, n_heads=4, n_kv_heads=2, hidden_dim=48, tie_embeddings=tie, seed=0)
    th_mod = randomize(TorchTransformer(50, 32, 2, 4, 2, 48, tie=tie), 0)
    assert list(em_mod.state_dict()) == list(th_mod.state_dict())
    assert em_mod.num_parameters() == sum(p.numel() for p in th_mod.parameters())
    assert [n for n, _ in em_mod.named_modules()] == [n for n, _ in th_mod.named_modules()]
    em_mod.load_state_dict(th_mod.state_dict())
    y = em_mod(em.input("tokens", ("B", "T"), em.int32))
    names = data_names(y)
    assert len(names) == len(set(names)), "each parameter is exactly one DATA node"
    expected = {n for n, _ in em_mod.named_parameters()}
    assert set(names) == expected
    if tie:
        assert "lm_head.weight" not in names  # tied: one node, named by its first key
    rng = np.random.default_rng(1)
    for b, t in [(2, 9), (1, 4)]:
        tok = rng.integers(0, 50, (b, t)).astype(np.int32)
        with torch.no_grad():
            ref = th_mod(torch.from_numpy(tok.astype(np.int64)))
        assert_close(em.reference(y, tokens=tok), ref.numpy(), what=f"B={b} T={t} tie={tie}")


def test_llama_hidden_dim_and_validation():
    assert nn.llama_hidden_dim(4096, 256) == 11008  # Llama-2 7B
    with pytest.raises(ValueError, match="multiple of n_kv_heads"):
        nn.Attention(24, 4, 3)
    with pytest.raises(ValueError, match="even head_dim"):
        nn.Attention(15, 5, rope=True)
    with pytest.raises(em.ShapeError, match=r"\(B, T, 24\)"):
        nn.Attention(24, 4)(em.input("x", (2, 3, 25)))
