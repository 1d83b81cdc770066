"""Conv1d 64 -> 128 channels, kernel 7, padding 3, on (32, 64, 8192)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, c_in, c_out, length = 32, 64, 128, 8192

SCALABLE = {"batch_size": 1, "length": 32}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, 7, padding=3)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, c_in, length)]


def get_init_inputs():
    return [c_in, c_out]
