"""Causal grouped-query attention: 32 query heads share 8 key/value heads, (batch 4, 1024 tokens, head dim 64)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, q_heads, kv_heads, seq, head_dim = 4, 32, 8, 1024, 64

SCALABLE = {"batch_size": 1, "seq": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def get_inputs():
    return [torch.randn(batch_size, q_heads, seq, head_dim), torch.randn(batch_size, kv_heads, seq, head_dim), torch.randn(batch_size, kv_heads, seq, head_dim)]


def get_init_inputs():
    return []
