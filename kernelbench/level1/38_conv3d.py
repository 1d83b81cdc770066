"""Conv3d 16 -> 32 channels, 3x3x3, padding 1, on (8, 16, 32, 64, 64)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, c_in, c_out, depth, height, width = 8, 16, 32, 32, 64, 64

SCALABLE = {"batch_size": 1, "depth": 4, "height": 6, "width": 6}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv3d(c_in, c_out, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, c_in, depth, height, width)]


def get_init_inputs():
    return [c_in, c_out]
