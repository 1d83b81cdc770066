"""LayerNorm, RMSNorm and GroupNorm: statistics over each sample's trailing dims (or channel groups),
so train and eval behave the same. Weights start at 1 and biases at 0, as in torch."""
from __future__ import annotations

from .. import dtypes as dt
from ..ops import norm as N
from . import init
from .module import Module
from .parameter import Parameter


def _shape(normalized_shape) -> tuple:
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not ns or not all(isinstance(s, int) and s > 0 for s in ns):
        raise ValueError(f"normalized_shape must be a positive int or a tuple of them, got {normalized_shape!r}")
    return ns


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 dtype=dt.float32):
        super().__init__()
        self.normalized_shape, self.eps = _shape(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(init.ones(self.normalized_shape, dtype))
            if bias:
                self.bias = Parameter(init.zeros(self.normalized_shape, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return N.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """x / sqrt(mean(x²) + eps) · weight. eps=None means the input dtype's machine epsilon (torch's
    default); Llama checkpoints usually want an explicit 1e-5 or 1e-6."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True,
                 dtype=dt.float32):
        super().__init__()
        self.normalized_shape, self.eps = _shape(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(init.ones(self.normalized_shape, dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return N.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 dtype=dt.float32):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels={num_channels} must be divisible by num_groups={num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(init.ones((num_channels,), dtype))
            self.bias = Parameter(init.zeros((num_channels,), dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            from ..tensor import ShapeError
            raise ShapeError(f"GroupNorm expects (N, {self.num_channels}, ...) input, got shape {x.shape}")
        return N.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
