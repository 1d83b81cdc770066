"""Matrix-vector product: (8192 x 16384) @ (16384 x 1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M, K = 8192, 16384

SCALABLE = {"M": 16, "K": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, v):
        return torch.matmul(a, v)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
