"""Feed-forward blocks: MLP (Linear/activation stacks) and SwiGLU (Llama's gated MLP)."""
from __future__ import annotations

from .. import dtypes as dt
from ..ops.activation import silu
from . import init
from .activation import make_activation
from .container import Sequential
from .linear import Linear
from .module import Module


class MLP(Sequential):
    """MLP([in, h1, …, out], activation="relu"): Linear, activation, Linear, …, Linear.

    It is a Sequential, so its state_dict keys ("0.weight", "2.weight", …) are those of the same stack
    written as torch.nn.Sequential. `final_activation` adds an activation after the last Linear too.
    """

    def __init__(self, sizes, activation="relu", bias: bool = True, final_activation: bool = False,
                 dtype=dt.float32, seed=None):
        sizes = list(sizes)
        if len(sizes) < 2 or not all(isinstance(s, int) and s > 0 for s in sizes):
            raise ValueError(f"MLP needs at least two positive layer sizes [in, …, out], got {sizes}")
        rng = init.generator(seed)
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(Linear(a, b, bias=bias, dtype=dtype, seed=rng))
            if i < len(sizes) - 2 or final_activation:
                layers.append(make_activation(activation))
        super().__init__(*layers)
        self.sizes = sizes


class SwiGLU(Module):
    """down_proj(silu(gate_proj(x)) * up_proj(x)) — Llama's feed-forward (w2(silu(w1 x) * w3 x) in
    Meta's naming; the Hugging Face names are used so their checkpoints map directly)."""

    def __init__(self, dim: int, hidden_dim: int, bias: bool = False, dtype=dt.float32, seed=None):
        super().__init__()
        rng = init.generator(seed)
        self.gate_proj = Linear(dim, hidden_dim, bias=bias, dtype=dtype, seed=rng)
        self.up_proj = Linear(dim, hidden_dim, bias=bias, dtype=dtype, seed=rng)
        self.down_proj = Linear(hidden_dim, dim, bias=bias, dtype=dtype, seed=rng)

    def forward(self, x):
        return self.down_proj(silu(self.gate_proj(x)) * self.up_proj(x))
