"""Huber loss (delta 1) between two 32768 x 4096 tensors."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, dim = 32768, 4096

SCALABLE = {"batch_size": 4, "dim": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred, target):
        return F.huber_loss(pred, target, delta=1.0)


def get_inputs():
    return [torch.randn(batch_size, dim) * 2, torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
