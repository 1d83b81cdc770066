"""ConvTranspose2d 64 -> 32 channels, 4x4, stride 2, padding 1 (2x upsampling), on (32, 64, 64, 64)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, c_in, c_out, height, width = 32, 64, 32, 64, 64

SCALABLE = {"batch_size": 1, "height": 4, "width": 4}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.ConvTranspose2d(c_in, c_out, 4, stride=2, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, c_in, height, width)]


def get_init_inputs():
    return [c_in, c_out]
