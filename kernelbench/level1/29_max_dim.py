"""Max over the middle axis of (64, 4096, 1024)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, dim1, dim2 = 64, 4096, 1024

SCALABLE = {"batch_size": 1, "dim1": 8, "dim2": 8}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.amax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return []
