"""Outer-product-like matrix product with K = 32: 8192 x 32 x 8192 (bound by writing C)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M, K, N = 8192, 32, 8192

SCALABLE = {"M": 16, "N": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
