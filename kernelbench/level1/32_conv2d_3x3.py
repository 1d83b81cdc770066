"""Conv2d 64 -> 128 channels, 3x3, padding 1, on (32, 64, 128, 128)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, c_in, c_out, height, width = 32, 64, 128, 128, 128

SCALABLE = {"batch_size": 1, "height": 8, "width": 8}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, c_in, height, width)]


def get_init_inputs():
    return [c_in, c_out]
