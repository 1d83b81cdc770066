"""Activation modules: thin wrappers over ember.ops.activation, with torch's names and arguments.

``inplace`` is accepted for source compatibility with torch and ignored: a lazy graph has no
in-place operations (the compiler decides what memory to reuse).
"""
from __future__ import annotations

from ..ops import activation as A
from ..ops import reduce as R
from .module import Module


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class _Elementwise(Module):
    fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()

    def forward(self, x):
        return type(self).fn(x)


class ReLU(_Elementwise):
    fn = staticmethod(A.relu)


class ReLU6(_Elementwise):
    fn = staticmethod(A.relu6)


class SiLU(_Elementwise):
    fn = staticmethod(A.silu)


class Sigmoid(_Elementwise):
    fn = staticmethod(A.sigmoid)


class Tanh(_Elementwise):
    fn = staticmethod(A.tanh)


class Hardswish(_Elementwise):
    fn = staticmethod(A.hardswish)


class Hardsigmoid(_Elementwise):
    fn = staticmethod(A.hardsigmoid)


class Mish(_Elementwise):
    fn = staticmethod(A.mish)


class Softsign(_Elementwise):
    fn = staticmethod(A.softsign)


class SELU(_Elementwise):
    fn = staticmethod(A.selu)


class GELU(Module):
    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return A.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return A.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return A.elu(x, self.alpha)


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return A.softplus(x, self.beta, self.threshold)


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh needs min_val < max_val, got {min_val}, {max_val}")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x):
        return A.hardtanh(x, self.min_val, self.max_val)


class Softmax(Module):
    """dim is required: torch's implicit-dim choice is deprecated and easy to get wrong."""

    def __init__(self, dim: int):
        super().__init__()
        if dim is None:
            raise ValueError("Softmax needs an explicit dim")
        self.dim = dim

    def forward(self, x):
        return R.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, x):
        return R.log_softmax(x, self.dim)


_BY_NAME = {"relu": ReLU, "relu6": ReLU6, "gelu": GELU, "gelu_tanh": lambda: GELU("tanh"), "silu": SiLU,
            "swish": SiLU, "sigmoid": Sigmoid, "tanh": Tanh, "leaky_relu": LeakyReLU, "hardswish": Hardswish,
            "hardsigmoid": Hardsigmoid, "elu": ELU, "selu": SELU, "softplus": Softplus, "mish": Mish,
            "identity": Identity}


def make_activation(spec) -> Module:
    """An activation module from a name ("gelu"), a Module class or factory, or a Module instance
    (shared, which is fine: activations hold no state)."""
    if isinstance(spec, Module):
        return spec
    if isinstance(spec, str):
        if spec.lower() not in _BY_NAME:
            raise ValueError(f"unknown activation {spec!r}; known: {sorted(_BY_NAME)}")
        return _BY_NAME[spec.lower()]()
    if callable(spec):
        m = spec()
        if not isinstance(m, Module):
            raise TypeError(f"activation factory {spec!r} returned {type(m).__name__}, not a Module")
        return m
    raise TypeError(f"activation must be a name, a Module class or a Module, got {type(spec).__name__}")
