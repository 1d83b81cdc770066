"""Depthwise Conv2d 3x3 (groups = 128 channels, on 32 x 128 x 112 x 112), BatchNorm2d in training mode, ReLU6."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, channels, height, width = 32, 128, 112, 112

SCALABLE = {"batch_size": 1, "height": 8, "width": 8}


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return F.relu6(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
