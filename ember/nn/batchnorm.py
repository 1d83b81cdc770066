"""BatchNorm1d/2d. Training mode normalises with the batch's statistics; eval mode with the running
statistics (buffers ``running_mean``, ``running_var``, ``num_batches_tracked``, named as in torch so
torch checkpoints load).

torch updates the running statistics in place during a training forward. A lazy graph cannot mutate
the module that built it, so a training forward instead records the new values as Tensors, which
``Module.buffer_updates()`` collects: evaluate them with the outputs and load them back to take the
same step torch takes. ``momentum=None`` (torch's cumulative average) uses 1/(num_batches_tracked+1)
with the count at the time the graph is built.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..ops import norm as N
from ..tensor import ShapeError, full
from . import init
from .module import Module
from .parameter import Parameter


class _BatchNorm(Module):
    ranks: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, dtype=dt.float32):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(init.ones((num_features,), dtype))
            self.bias = Parameter(init.zeros((num_features,), dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", init.zeros((num_features,), dtype))
            self.register_buffer("running_var", init.ones((num_features,), dtype))
            self.register_buffer("num_batches_tracked", np.array(0, np.int64))
        else:
            for b in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(b, None)

    def forward(self, x):
        name = type(self).__name__
        if x.ndim not in self.ranks:
            raise ShapeError(f"{name} expects input of rank {' or '.join(map(str, self.ranks))}, got shape {x.shape}")
        if x.shape[1] != self.num_features:
            raise ShapeError(f"{name}: input has {x.shape[1]} channels, expected {self.num_features} (shape {x.shape})")
        batch_stats = self.training or not self.track_running_stats
        y = N.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                         training=batch_stats, eps=self.eps)
        self._buffer_updates.clear()
        if self.training and self.track_running_stats:
            self._record_update(x)
        return y

    def _record_update(self, x) -> None:
        count = int(self.get_buffer("num_batches_tracked").data)
        m = self.momentum if self.momentum is not None else 1.0 / (count + 1)
        axes = (0,) + tuple(range(2, x.ndim))
        xf = x.cast(self.running_mean.dtype)
        # the running variance is the unbiased one (divides by n-1), as in torch
        self._buffer_updates["running_mean"] = self.running_mean * (1 - m) + xf.mean(axes) * m
        self._buffer_updates["running_var"] = self.running_var * (1 - m) + xf.var(axes, correction=1) * m
        self._buffer_updates["num_batches_tracked"] = full((), count + 1, dt.int64)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Input (N, C) or (N, C, L)."""
    ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Input (N, C, H, W)."""
    ranks = (4,)
