"""A small VGG-style CNN: two stages of (conv3x3-ReLU-conv3x3-ReLU-maxpool) with 64 and 128
channels, then a 2-layer classifier, on (32, 3, 64, 64)."""
import torch
import torch.nn as nn

batch_size, size, classes = 32, 64, 10

SCALABLE = {"batch_size": 1, "size": 8}


class Model(nn.Module):
    def __init__(self, size, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Linear(128 * (size // 4) ** 2, 512), nn.ReLU(), nn.Linear(512, classes))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def get_inputs():
    return [torch.randn(batch_size, 3, size, size)]


def get_init_inputs():
    return [size, classes]
