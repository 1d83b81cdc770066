"""Convolutions (Conv1d/2d/3d) and transposed convolutions (ConvTranspose1d/2d), torch layouts and init.

Only zero padding is supported ('reflect'/'replicate'/'circular' raise): the pad view pads with a
constant, and the other modes are rare enough not to justify their own index arithmetic yet.
Unbatched inputs (C, *spatial) are accepted as torch accepts them.
"""
from __future__ import annotations

import math

from .. import dtypes as dt
from ..ops import conv as C
from ..tensor import ShapeError
from . import init
from .module import Module
from .parameter import Parameter


def _ntuple(v, n: int, what: str) -> tuple:
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) != n or not all(isinstance(i, int) for i in v):
        raise ValueError(f"{what} must be an int or {n} ints, got {v}")
    return v


class _ConvNd(Module):
    nd = 0
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", output_padding=0,
                 dtype=dt.float32, seed=None):
        super().__init__()
        nd, name = self.nd, type(self).__name__
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels={in_channels} and out_channels={out_channels} must be "
                             f"divisible by groups={groups}")
        if padding_mode != "zeros":
            raise NotImplementedError(f"{name}: padding_mode={padding_mode!r} (only 'zeros' is supported)")
        if isinstance(padding, str):
            if padding not in ("same", "valid") or self.transposed:
                allowed = "ints" if self.transposed else "ints, 'same' or 'valid'"
                raise ValueError(f"{name}: padding must be {allowed}, got {padding!r}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, nd, "stride")):
                raise ValueError(f"{name}: padding='same' needs stride 1")
        else:
            padding = _ntuple(padding, nd, "padding")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size")
        self.stride, self.dilation = _ntuple(stride, nd, "stride"), _ntuple(dilation, nd, "dilation")
        self.padding, self.padding_mode = padding, padding_mode
        self.output_padding = _ntuple(output_padding, nd, "output_padding")
        if self.transposed:
            wshape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            wshape = (out_channels, in_channels // groups) + self.kernel_size
        # torch computes fan_in from weight dim 1 for both kinds (so out/groups for transposed convs)
        fan_in = wshape[1] * math.prod(self.kernel_size)
        rng = init.generator(seed)
        bound = init.kaiming_uniform_bound(fan_in)
        self.weight = Parameter(init.uniform(wshape, bound, rng, dtype))
        if bias:
            self.bias = Parameter(init.uniform((out_channels,), bound, rng, dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        nd = self.nd
        if x.ndim not in (nd + 1, nd + 2):
            raise ShapeError(f"{type(self).__name__} expects (N, C, {', '.join('*' * nd)}) or unbatched input, "
                             f"got shape {x.shape}")
        unbatched = x.ndim == nd + 1
        if unbatched:
            x = x.unsqueeze(0)
        if x.shape[1] != self.in_channels:
            raise ShapeError(f"{type(self).__name__}: input has {x.shape[1]} channels, expected {self.in_channels} "
                             f"(input shape {x.shape})")
        y = self._conv(x)
        return y.squeeze(0) if unbatched else y

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self.nd:
            s += f", dilation={self.dilation}"
        if self.transposed and self.output_padding != (0,) * self.nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", dtype=dt.float32, seed=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, 0, dtype, seed)

    def _conv(self, x):
        fn = (C.conv1d, C.conv2d, C.conv3d)[self.nd - 1]
        return fn(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    nd = 1


class Conv2d(_Conv):
    nd = 2


class Conv3d(_Conv):
    nd = 3


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", dtype=dt.float32, seed=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, dtype, seed)
        for op, s, d in zip(self.output_padding, self.stride, self.dilation):
            if op >= max(s, d):  # torch's rule: the extra row must not be a whole stride/dilation step
                raise ValueError(f"{type(self).__name__}: output_padding {self.output_padding} must be smaller "
                                 f"than stride {self.stride} or dilation {self.dilation}")

    def _conv(self, x):
        fn = (C.conv_transpose1d, C.conv_transpose2d)[self.nd - 1]
        return fn(x, self.weight, self.bias, self.stride, self.padding, self.output_padding, self.groups,
                  self.dilation)


class ConvTranspose1d(_ConvTranspose):
    nd = 1


class ConvTranspose2d(_ConvTranspose):
    nd = 2
