"""A @ B.T with B stored row-major as (N, K): 2048 x 4096 x 3072."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M, K, N = 2048, 4096, 3072

SCALABLE = {"M": 16, "K": 16, "N": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b.T)


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
