"""Linear: y = x Wᵀ + b with torch's layout (weight is (out_features, in_features)) and init."""
from __future__ import annotations

from .. import dtypes as dt
from ..ops.linalg import linear
from . import init
from .module import Module
from .parameter import Parameter


class Linear(Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=dt.float32, seed=None):
        super().__init__()
        if in_features < 0 or out_features < 0:
            raise ValueError(f"Linear features must be >= 0, got in={in_features}, out={out_features}")
        self.in_features, self.out_features = in_features, out_features
        rng = init.generator(seed)
        bound = init.kaiming_uniform_bound(in_features)
        self.weight = Parameter(init.uniform((out_features, in_features), bound, rng, dtype))
        if bias:
            self.bias = Parameter(init.uniform((out_features,), bound, rng, dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
