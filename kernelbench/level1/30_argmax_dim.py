"""Argmax over the last axis of (64, 1024, 4096) (int64 indices)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, dim1, dim2 = 64, 1024, 4096

SCALABLE = {"batch_size": 1, "dim1": 8, "dim2": 8}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=2)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return []
