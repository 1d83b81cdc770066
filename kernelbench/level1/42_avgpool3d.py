"""AvgPool3d 3x3x3, stride 2, padding 1 (padding counted), on (8, 32, 64, 64, 64)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, channels, depth, height, width = 8, 32, 64, 64, 64

SCALABLE = {"batch_size": 1, "depth": 5, "height": 5, "width": 5}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.avg_pool3d(x, kernel_size=3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return []
