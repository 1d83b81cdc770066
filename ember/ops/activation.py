"""Activation functions as compositions of primitives (exp via exp2, tanh via sigmoid, …).
Compositions with float constants compute in float32 for half-precision inputs (tensor.opmath)."""
from __future__ import annotations

import math

from ..tensor import Tensor, _float, opmath, tensor_method, where

__all__ = ["relu", "relu6", "leaky_relu", "sigmoid", "tanh", "gelu", "silu", "swish", "softplus", "elu",
           "selu", "hardtanh", "hardsigmoid", "hardswish", "mish", "erf", "softsign", "logsigmoid"]


@tensor_method
def relu(x: Tensor) -> Tensor:
    return where(x < 0, 0, x)  # NaN passes through, as in torch


@tensor_method
def relu6(x: Tensor) -> Tensor:
    return hardtanh(x, 0.0, 6.0)


@tensor_method
def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    return where(x < 0, x * negative_slope, x)


@tensor_method
@opmath
def sigmoid(x: Tensor) -> Tensor:
    # exp of -|x| never overflows, so neither the value nor its gradient meets inf (1/(1+exp(-x))
    # differentiates to inf/inf = NaN in float32 for x < -88)
    x = _float(x)
    e = (-where(x < 0, -x, x)).exp()
    return where(x < 0, e, 1.0) / (1.0 + e)


@tensor_method
@opmath
def logsigmoid(x: Tensor) -> Tensor:
    return -softplus(-x)


@tensor_method
@opmath
def tanh(x: Tensor) -> Tensor:
    x = _float(x)
    return 2.0 * sigmoid(2.0 * x) - 1.0


@tensor_method
@opmath
def erf(x: Tensor) -> Tensor:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): below float32's resolution of erf's range."""
    x = _float(x)
    a = x.abs()
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    y = 1.0 - poly * (-(a * a)).exp()
    return where(x < 0, -y, y)


@tensor_method
@opmath
def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    x = _float(x)
    if approximate == "tanh":
        return 0.5 * x * (1.0 + tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))
    if approximate != "none":
        raise ValueError(f"gelu approximate must be 'none' or 'tanh', got {approximate!r}")
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


@tensor_method
@opmath
def silu(x: Tensor) -> Tensor:
    return _float(x) * sigmoid(x)


swish = silu


@tensor_method
@opmath
def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    x = _float(x)
    bx = x * beta
    soft = (1.0 + where(bx > threshold, 0.0, bx).exp()).log() * (1.0 / beta)  # no inf in the unused branch
    return where(bx > threshold, x, soft)


@tensor_method
@opmath
def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    x = _float(x)
    return where(x > 0, x, alpha * (where(x > 0, 0.0, x).exp() - 1.0))  # no inf in the unused branch


@tensor_method
@opmath
def selu(x: Tensor) -> Tensor:
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * elu(x, alpha)


@tensor_method
def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return where(x < min_val, min_val, where(x > max_val, max_val, x))


@tensor_method
@opmath
def hardsigmoid(x: Tensor) -> Tensor:
    return hardtanh(_float(x) * (1.0 / 6.0) + 0.5, 0.0, 1.0)


@tensor_method
@opmath
def hardswish(x: Tensor) -> Tensor:
    return _float(x) * hardsigmoid(x)


@tensor_method
@opmath
def mish(x: Tensor) -> Tensor:
    return _float(x) * tanh(softplus(x))


@tensor_method
@opmath
def softsign(x: Tensor) -> Tensor:
    x = _float(x)
    return x / (1.0 + x.abs())
