"""ConvTranspose3d 32 -> 16 channels, 3x3x3, stride 2, padding 1, output_padding 1, on (4, 32, 16, 32, 32)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, c_in, c_out, depth, height, width = 4, 32, 16, 16, 32, 32

SCALABLE = {"batch_size": 1, "depth": 3, "height": 4, "width": 4}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.ConvTranspose3d(c_in, c_out, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, c_in, depth, height, width)]


def get_init_inputs():
    return [c_in, c_out]
