"""Dropout.

Ember compiles deterministic programs: a graph has no random-number primitive. So:

* in eval mode (and for p == 0) Dropout is the identity, as in torch;
* in training mode it needs its randomness as a runtime input: ``drop(x, noise=u)`` with ``u`` a
  tensor of uniform [0, 1) samples broadcastable to x (e.g. ``em.input("u", x.shape)``, drawn fresh by
  the caller each step). Elements with ``u < p`` are zeroed and the rest scaled by 1/(1-p), which is
  exactly torch's dropout given the same mask;
* training mode without ``noise`` raises NotImplementedError rather than silently skipping the
  dropout, which would change what is being trained.
"""
from __future__ import annotations

from ..tensor import Tensor, broadcast_shapes, where
from .module import Module


class Dropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x: Tensor, noise: Tensor | None = None) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if noise is None:
            raise NotImplementedError(
                "Dropout in training mode needs its randomness as an input, because Ember graphs have no "
                "random-number primitive: call it as dropout(x, noise=u) with u uniform in [0, 1) "
                "(e.g. u = em.input('u', x.shape)), or switch the model to eval() for inference")
        if not noise.dtype.is_float:
            raise TypeError(f"dropout noise must be uniform floats in [0, 1), got {noise.dtype.name}")
        broadcast_shapes(x.node.shape, noise.node.shape)  # a clear ShapeError if they cannot broadcast
        if self.p == 1.0:
            return where(noise < 2.0, 0.0, x)  # all dropped; keeps x's shape and dtype
        return where(noise < self.p, 0.0, x * (1.0 / (1.0 - self.p)))

    def extra_repr(self) -> str:
        return f"p={self.p}"
