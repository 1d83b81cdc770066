"""Tall-skinny product: a 32768 x 2048 matrix times 2048 x 64 (memory bound on A)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M, K, N = 32768, 2048, 64

SCALABLE = {"M": 16, "K": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
