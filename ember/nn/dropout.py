"""Dropout.

* in eval mode (and for p == 0) Dropout is the identity, as in torch;
* in training mode the mask comes from the counter-based PHILOX primitive (`ember.dropout`): element i
  is dropped when philox(seed, step · 2^32 + i) < p, and the rest are scaled by 1/(1-p), torch's rule.
  ``step`` is the graph input `TRAIN_STEP_INPUT` (0-d float32) that `em.compile_train` feeds with the
  1-based number of the update, so every step draws a fresh mask without recompiling, and a run is
  reproducible from the seeds. A graph built outside compile_train takes ``step`` as an ordinary input.
  ``seed`` keys the module's stream: by default the order in which Dropout modules were constructed in
  this process (0, 1, …), so two layers draw independent masks and rerunning a script draws the same;
* ``drop(x, noise=u)`` instead takes the randomness as a tensor ``u`` of uniform [0, 1) samples
  broadcastable to x (e.g. drawn by the caller each step): elements with ``u < p`` are zeroed.
"""
from __future__ import annotations

import itertools

from .. import dtypes as dt
from ..ops.random import dropout
from ..tensor import Tensor, broadcast_shapes, full, where
from ..tensor import input as _input
from .module import Module

TRAIN_STEP_INPUT = "step"  # the name of compile_train's update-number input (train.py: step_name)
_STREAMS = itertools.count()


class Dropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False, seed: int | None = None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p}")
        self.p = float(p)
        self.seed = int(seed) if seed is not None else next(_STREAMS)

    def forward(self, x: Tensor, noise: Tensor | None = None) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if noise is None:
            # each update's samples start at counter step * 2^32: disjoint windows while a tensor has
            # fewer than 2^32 elements (the counter's high word is the step)
            step = _input(TRAIN_STEP_INPUT, (), dt.float32).cast(dt.int64)
            return dropout(x, self.p, seed=self.seed, offset=step * full((), 1 << 32, dt.int64))
        if not noise.dtype.is_float:
            raise TypeError(f"dropout noise must be uniform floats in [0, 1), got {noise.dtype.name}")
        broadcast_shapes(x.node.shape, noise.node.shape)  # a clear ShapeError if they cannot broadcast
        if self.p == 1.0:
            return where(noise < 2.0, 0.0, x)  # all dropped; keeps x's shape and dtype
        return where(noise < self.p, 0.0, x * (1.0 / (1.0 - self.p)))

    def extra_repr(self) -> str:
        return f"p={self.p}, seed={self.seed}"
