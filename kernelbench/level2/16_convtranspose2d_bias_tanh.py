"""ConvTranspose2d 64 -> 32, 4x4, stride 2 (on 32 x 64 x 64 x 64), subtract a learned per-channel bias, tanh."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, c_in, c_out, height, width = 32, 64, 32, 64, 64

SCALABLE = {"batch_size": 1, "height": 4, "width": 4}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.ConvTranspose2d(c_in, c_out, 4, stride=2, padding=1)
        self.bias = nn.Parameter(torch.randn(c_out, 1, 1) * 0.1)

    def forward(self, x):
        return torch.tanh(self.conv(x) - self.bias)


def get_inputs():
    return [torch.randn(batch_size, c_in, height, width)]


def get_init_inputs():
    return [c_in, c_out]
