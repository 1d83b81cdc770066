"""A GRU cell (512 -> 1024) unrolled over 16 time steps, batch 256, then a linear head on the last
hidden state. The initial hidden state is an input (no state is kept between calls)."""
import torch
import torch.nn as nn

batch_size, steps, input_size, hidden = 256, 16, 512, 1024

SCALABLE = {"batch_size": 2, "input_size": 8, "hidden": 8}


class Model(nn.Module):
    def __init__(self, input_size, hidden, steps):
        super().__init__()
        self.cell = nn.GRUCell(input_size, hidden)
        self.head = nn.Linear(hidden, 128)
        self.steps = steps

    def forward(self, x, h):
        for t in range(self.steps):
            h = self.cell(x[:, t], h)
        return self.head(h)


def get_inputs():
    return [torch.randn(batch_size, steps, input_size), torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [input_size, hidden, steps]
