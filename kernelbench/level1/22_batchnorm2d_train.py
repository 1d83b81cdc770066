"""BatchNorm2d in training mode (batch statistics; running stats updated) on (64, 64, 128, 128).
Inputs have mean and variance far from 0 and 1, so the normalisation is far from the identity.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, channels, height, width = 64, 64, 128, 128

SCALABLE = {"batch_size": 2, "height": 8, "width": 8}


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width) * 2 + 0.5]


def get_init_inputs():
    return [channels]
