"""3-D tensor times matrix: (16, 1024, 1024) @ (1024, 768)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, S, K, N = 16, 1024, 1024, 768

SCALABLE = {"batch_size": 1, "S": 8, "K": 8, "N": 8}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(batch_size, S, K), torch.randn(K, N)]


def get_init_inputs():
    return []
