"""Scaled dot-product attention, (batch 8, 16 heads, 1024 tokens, head dim 64), no mask."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, heads, seq, head_dim = 8, 16, 1024, 64

SCALABLE = {"batch_size": 1, "seq": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    return [torch.randn(batch_size, heads, seq, head_dim) for _ in range(3)]


def get_init_inputs():
    return []
