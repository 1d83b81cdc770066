"""Cross entropy of 32768 x 4096 logits against int64 class indices (mean)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, classes = 32768, 4096

SCALABLE = {"batch_size": 4, "classes": 16}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


def get_inputs():
    return [torch.randn(batch_size, classes) * 2, torch.randint(0, classes, (batch_size,))]


def get_init_inputs():
    return []
