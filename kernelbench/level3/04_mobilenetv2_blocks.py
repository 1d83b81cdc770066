"""Two MobileNetV2 inverted-residual blocks (1x1 expand x6, depthwise 3x3, 1x1 project; the first
with a residual, the second with stride 2), BatchNorm in training mode, on (32, 32, 56, 56)."""
import torch
import torch.nn as nn

batch_size, channels, height, width = 32, 32, 56, 56

SCALABLE = {"batch_size": 1, "height": 8, "width": 8}


class InvertedResidual(nn.Module):
    def __init__(self, c_in, c_out, stride, expand):
        super().__init__()
        hidden = c_in * expand
        self.residual = stride == 1 and c_in == c_out
        self.body = nn.Sequential(
            nn.Conv2d(c_in, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride=stride, padding=1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, c_out, 1, bias=False), nn.BatchNorm2d(c_out),
        )

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.blocks = nn.Sequential(InvertedResidual(channels, channels, 1, 6),
                                    InvertedResidual(channels, 2 * channels, 2, 6))

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
