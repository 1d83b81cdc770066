"""GPT-style pre-LayerNorm transformer block: causal multi-head attention (12 heads of 64) and a
GELU MLP (768 -> 3072 -> 768), on (8, 512, 768)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, seq, d_model, heads = 8, 512, 768, 12

SCALABLE = {"batch_size": 1, "seq": 8}


class Model(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.out = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def get_inputs():
    return [torch.randn(batch_size, seq, d_model)]


def get_init_inputs():
    return [d_model, heads]
