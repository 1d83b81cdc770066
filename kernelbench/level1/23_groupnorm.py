"""GroupNorm with 8 groups of 8 channels on (32, 64, 128, 128).
Inputs have mean and variance far from 0 and 1, so the normalisation is far from the identity.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, channels, groups, height, width = 32, 64, 8, 128, 128

SCALABLE = {"batch_size": 2, "height": 8, "width": 8}


class Model(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return self.gn(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width) * 2 + 0.5]


def get_init_inputs():
    return [groups, channels]
