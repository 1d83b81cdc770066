"""Rectangular matrix product (M, K) @ (K, N) with a long reduction: 2048 x 8192 x 1024."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M, K, N = 2048, 8192, 1024

SCALABLE = {"M": 16, "K": 16, "N": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
