"""MaxPool2d 3x3, stride 2, padding 1, on (32, 64, 224, 224)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, channels, height, width = 32, 64, 224, 224

SCALABLE = {"batch_size": 1, "height": 9, "width": 9}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.max_pool2d(x, kernel_size=3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return []
