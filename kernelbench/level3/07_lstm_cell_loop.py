"""An LSTM cell (512 -> 1024) unrolled over 16 time steps, batch 256; returns the last hidden and
cell states. Initial states are inputs (no state is kept between calls)."""
import torch
import torch.nn as nn

batch_size, steps, input_size, hidden = 256, 16, 512, 1024

SCALABLE = {"batch_size": 2, "input_size": 8, "hidden": 8}


class Model(nn.Module):
    def __init__(self, input_size, hidden, steps):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden)
        self.steps = steps

    def forward(self, x, h, c):
        for t in range(self.steps):
            h, c = self.cell(x[:, t], (h, c))
        return h, c


def get_inputs():
    return [torch.randn(batch_size, steps, input_size), torch.randn(batch_size, hidden), torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [input_size, hidden, steps]
