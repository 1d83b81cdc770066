"""Linear 4096 -> 4096 (batch 2048), softmax over features, multiply by a learned per-feature scale."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size, in_features, out_features = 2048, 4096, 4096

SCALABLE = {"batch_size": 4, "in_features": 16, "out_features": 16}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.rand(out_features) + 0.5)

    def forward(self, x):
        return torch.softmax(self.linear(x), dim=1) * self.scale


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
