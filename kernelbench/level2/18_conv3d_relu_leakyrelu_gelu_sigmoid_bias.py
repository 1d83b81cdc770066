"""Conv3d 16 -> 32, 3x3x3 (on 8 x 16 x 32 x 64 x 64), ReLU, LeakyReLU, GELU, sigmoid, add a learned per-channel bias."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, c_in, c_out, depth, height, width = 8, 16, 32, 32, 64, 64

SCALABLE = {"batch_size": 1, "depth": 4, "height": 6, "width": 6}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv3d(c_in, c_out, 3, padding=1)
        self.bias = nn.Parameter(torch.randn(c_out, 1, 1, 1) * 0.1)

    def forward(self, x):
        x = F.leaky_relu(torch.relu(self.conv(x)), 0.01)
        return torch.sigmoid(F.gelu(x)) + self.bias


def get_inputs():
    return [torch.randn(batch_size, c_in, depth, height, width)]


def get_init_inputs():
    return [c_in, c_out]
