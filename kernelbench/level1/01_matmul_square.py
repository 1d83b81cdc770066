"""Square matrix product C = A @ B, N = 4096 (137 GFLOP)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N = 4096

SCALABLE = {"N": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
