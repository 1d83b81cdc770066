"""Deep MLP: 4096 -> 4096 -> 4096 -> 4096 -> 1000 with ReLU, batch 1024."""
import torch
import torch.nn as nn

batch_size, in_features, hidden, classes = 1024, 4096, 4096, 1000

SCALABLE = {"batch_size": 2, "in_features": 16, "hidden": 16, "classes": 10}


class Model(nn.Module):
    def __init__(self, in_features, hidden, classes):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden, classes]
