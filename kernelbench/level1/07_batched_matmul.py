"""Batched matrix product: 128 x (512 x 256) @ (256 x 512)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, M, K, N = 128, 512, 256, 512

SCALABLE = {"batch_size": 2, "M": 8, "K": 8, "N": 8}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]


def get_init_inputs():
    return []
