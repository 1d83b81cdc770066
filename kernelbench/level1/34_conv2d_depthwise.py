"""Depthwise Conv2d (groups = channels = 128), 3x3, padding 1, on (32, 128, 128, 128)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, channels, height, width = 32, 128, 128, 128

SCALABLE = {"batch_size": 1, "height": 8, "width": 8}


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
