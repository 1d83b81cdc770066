"""Binary cross entropy with logits, 32768 x 4096, targets in [0, 1)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, dim = 32768, 4096

SCALABLE = {"batch_size": 4, "dim": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, target):
        return F.binary_cross_entropy_with_logits(logits, target)


def get_inputs():
    return [torch.randn(batch_size, dim) * 3, torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
