"""Pointwise (1x1) Conv2d 256 -> 256 channels on (32, 256, 64, 64)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, c_in, c_out, height, width = 32, 256, 256, 64, 64

SCALABLE = {"batch_size": 1, "height": 4, "width": 4}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, c_in, height, width)]


def get_init_inputs():
    return [c_in, c_out]
