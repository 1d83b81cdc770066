"""Conv2d 32 -> 64 with an asymmetric 3x5 kernel, dilation (2, 1), padding (2, 2), stride (1, 2), on (16, 32, 128, 256)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, c_in, c_out, height, width = 16, 32, 64, 128, 256

SCALABLE = {"batch_size": 1, "height": 8, "width": 16}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, (3, 5), stride=(1, 2), padding=(2, 2), dilation=(2, 1))

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, c_in, height, width)]


def get_init_inputs():
    return [c_in, c_out]
