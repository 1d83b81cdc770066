"""AlexNet-style first convolution: 3 -> 96 channels, 11x11, stride 4, padding 2, on (64, 3, 224, 224)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, height, width = 64, 224, 224

SCALABLE = {"batch_size": 1, "height": 23, "width": 23}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 96, kernel_size=11, stride=4, padding=2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return []
