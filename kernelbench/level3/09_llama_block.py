"""A Llama-style decoder block: RMSNorm, rotary position embeddings, causal grouped-query
attention (16 query heads share 4 key/value heads of 64), SwiGLU MLP (1024 -> 2816 -> 1024), on
(4, 512, 1024)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, seq, d_model, heads, kv_heads, ffn = 4, 512, 1024, 16, 4, 2816

SCALABLE = {"batch_size": 1, "seq": 8}


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def __init__(self, d_model, heads, kv_heads, ffn, max_seq=4096):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d_model // heads
        self.norm1 = nn.RMSNorm(d_model, eps=1e-5)
        self.norm2 = nn.RMSNorm(d_model, eps=1e-5)
        self.wq = nn.Linear(d_model, heads * self.hd, bias=False)
        self.wk = nn.Linear(d_model, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(d_model, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(heads * self.hd, d_model, bias=False)
        self.w1 = nn.Linear(d_model, ffn, bias=False)
        self.w3 = nn.Linear(d_model, ffn, bias=False)
        self.w2 = nn.Linear(ffn, d_model, bias=False)
        inv = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        ang = torch.outer(torch.arange(max_seq).float(), inv)
        ang = torch.cat((ang, ang), dim=-1)
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        h = self.norm1(x)
        q = self.wq(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.wk(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.wv(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        cos, sin = self.cos[:t], self.sin[:t]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, t, d))
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def get_inputs():
    return [torch.randn(batch_size, seq, d_model)]


def get_init_inputs():
    return [d_model, heads, kv_heads, ffn]
