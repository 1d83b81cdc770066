"""Two ResNet basic blocks (conv-BN-ReLU-conv-BN + identity, then a stride-2 block with a 1x1
projection shortcut), BatchNorm in training mode, on (32, 64, 56, 56)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, channels, height, width = 32, 64, 56, 56

SCALABLE = {"batch_size": 1, "height": 8, "width": 8}


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.block1 = BasicBlock(channels, channels, 1)
        self.block2 = BasicBlock(channels, 2 * channels, 2)

    def forward(self, x):
        return self.block2(self.block1(x))


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
