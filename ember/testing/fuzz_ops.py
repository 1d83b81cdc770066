"""The fuzzer's operations, each written twice: with Ember's tensor API and with PyTorch.

A fuzz program (ember/testing/fuzz.py) is a list of steps `out = op(args..., **params)`; building it
runs every step through one column of this table. The Ember column is what gets compiled; the torch
column, evaluated in float64, is the oracle at sizes numpy's reference would take seconds on. Both
columns take the same arguments, so a program is one text and two graphs.

Ops whose float result is discontinuous in their inputs (comparisons, argmax) are only ever applied
to *exact* values (graph inputs and views of them), which both sides see bit for bit; everything
else is continuous, so float32 rounding moves results by rounding-sized amounts only. The constants
the generator uses are exact in bfloat16 (0.125, 0.25, 0.5, powers of two), so an Ember bfloat16
graph and the float64 oracle multiply by the same numbers.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class Op:
    kind: str  # contraction | reduction | view | unary | binary | select | cast | scale
    ember: Callable  # (em, *tensors, **params) -> Tensor
    torch: Callable  # (torch, F, *tensors, **params) -> torch.Tensor


def _tuple(axes):
    return tuple(int(a) for a in axes)


def _slices(ndim: int, axis: int, start: int, stop: int, step: int) -> tuple:
    return tuple(slice(start, stop, step) if d == axis else slice(None) for d in range(ndim))


def _em_argmax_value(em, x, axis, keepdim):
    i = em.argmax(x, axis, keepdim=True)
    v = em.gather(x, axis, i)
    return v if keepdim else v.squeeze(axis)


def _t_argmax_value(torch, F, x, axis, keepdim):
    v = torch.gather(x, axis, x.argmax(axis, keepdim=True))
    return v if keepdim else v.squeeze(axis)


def _em_layer_norm(em, x, *wb, n):
    return em.layer_norm(x, x.shape[x.ndim - n:], *wb)


def _t_layer_norm(torch, F, x, *wb, n):
    return F.layer_norm(x, x.shape[x.ndim - n:], *wb, eps=1e-5)


def _em_expand(em, x, axis, size):
    y = x.unsqueeze(axis)
    shape = list(y.shape)
    shape[axis] = size
    return y.expand(*shape)


def _t_expand(torch, F, x, axis, size):
    y = x.unsqueeze(axis)
    shape = list(y.shape)
    shape[axis] = size
    return y.expand(*shape)


def _t_cast(torch, F, x, dtype):
    """Round to `dtype` and continue in float64, as the reference does at a CAST."""
    return x.to(getattr(torch, dtype)).to(torch.float64)


OPS: dict = {
    # contractions (weights are new inputs scaled by 1/sqrt(k), so outputs keep the inputs' scale)
    "matmul": Op("contraction", lambda em, a, b: a @ b, lambda T, F, a, b: a @ b),
    "linear": Op("contraction", lambda em, a, w, *b: em.linear(a, w, *b), lambda T, F, a, w, *b: F.linear(a, w, *b)),
    "conv2d": Op("contraction", lambda em, x, w, stride, padding: em.conv2d(x, w, None, stride, padding),
                 lambda T, F, x, w, stride, padding: F.conv2d(x, w, None, stride, padding)),
    # reductions
    "sum": Op("reduction", lambda em, x, axes, keepdim: em.sum(x, _tuple(axes), keepdim=keepdim),
              lambda T, F, x, axes, keepdim: x.sum(dim=_tuple(axes), keepdim=keepdim)),
    "mean": Op("reduction", lambda em, x, axes, keepdim: em.mean(x, _tuple(axes), keepdim=keepdim),
               lambda T, F, x, axes, keepdim: x.mean(dim=_tuple(axes), keepdim=keepdim)),
    "max": Op("reduction", lambda em, x, axes, keepdim: em.max(x, _tuple(axes), keepdim=keepdim),
              lambda T, F, x, axes, keepdim: x.amax(dim=_tuple(axes), keepdim=keepdim)),
    "min": Op("reduction", lambda em, x, axes, keepdim: em.min(x, _tuple(axes), keepdim=keepdim),
              lambda T, F, x, axes, keepdim: x.amin(dim=_tuple(axes), keepdim=keepdim)),
    "logsumexp": Op("reduction", lambda em, x, axes, keepdim: em.logsumexp(x, _tuple(axes), keepdim=keepdim),
                    lambda T, F, x, axes, keepdim: T.logsumexp(x, dim=_tuple(axes), keepdim=keepdim)),
    "softmax": Op("reduction", lambda em, x, axis: em.softmax(x, axis), lambda T, F, x, axis: T.softmax(x, axis)),
    "log_softmax": Op("reduction", lambda em, x, axis: em.log_softmax(x, axis),
                      lambda T, F, x, axis: T.log_softmax(x, axis)),
    "layer_norm": Op("reduction", _em_layer_norm, _t_layer_norm),
    "argmax_value": Op("reduction", _em_argmax_value, _t_argmax_value),
    # the index itself: only on exact values (inputs and their views), compared exactly
    "argmax": Op("reduction", lambda em, x, axis, keepdim: em.argmax(x, axis, keepdim=keepdim),
                 lambda T, F, x, axis, keepdim: x.argmax(axis, keepdim=keepdim)),
    # views
    "reshape": Op("view", lambda em, x, shape: x.reshape(*shape), lambda T, F, x, shape: x.reshape(*shape)),
    "permute": Op("view", lambda em, x, order: x.permute(*order), lambda T, F, x, order: x.permute(*order)),
    "transpose": Op("view", lambda em, x, a, b: x.transpose(a, b), lambda T, F, x, a, b: x.transpose(a, b)),
    "slice": Op("view", lambda em, x, axis, start, stop, step: x[_slices(x.ndim, axis, start, stop, step)],
                lambda T, F, x, axis, start, stop, step: x[_slices(x.ndim, axis, start, stop, step)]),
    "expand": Op("view", _em_expand, _t_expand),
    "pad": Op("view", lambda em, x, pads: em.pad(x, list(pads)), lambda T, F, x, pads: F.pad(x, list(pads))),
    "flip": Op("view", lambda em, x, axes: em.flip(x, _tuple(axes)), lambda T, F, x, axes: x.flip(_tuple(axes))),
    # elementwise, unary (log/sqrt/rsqrt/div only see arguments bounded away from their poles)
    "exp": Op("unary", lambda em, x: x.exp(), lambda T, F, x: x.exp()),
    "tanh": Op("unary", lambda em, x: em.tanh(x), lambda T, F, x: x.tanh()),
    "sigmoid": Op("unary", lambda em, x: em.sigmoid(x), lambda T, F, x: x.sigmoid()),
    "gelu": Op("unary", lambda em, x: em.gelu(x), lambda T, F, x: F.gelu(x)),
    "gelu_tanh": Op("unary", lambda em, x: em.gelu(x, approximate="tanh"), lambda T, F, x: F.gelu(x, approximate="tanh")),
    "silu": Op("unary", lambda em, x: em.silu(x), lambda T, F, x: F.silu(x)),
    "relu": Op("unary", lambda em, x: em.relu(x), lambda T, F, x: F.relu(x)),
    "leaky_relu": Op("unary", lambda em, x: em.leaky_relu(x, 0.125), lambda T, F, x: F.leaky_relu(x, 0.125)),
    "softplus": Op("unary", lambda em, x: em.softplus(x), lambda T, F, x: F.softplus(x)),
    "abs": Op("unary", lambda em, x: x.abs(), lambda T, F, x: x.abs()),
    "neg": Op("unary", lambda em, x: -x, lambda T, F, x: -x),
    "square": Op("unary", lambda em, x: x * x, lambda T, F, x: x * x),
    "sin": Op("unary", lambda em, x: x.sin(), lambda T, F, x: x.sin()),
    "log_abs": Op("unary", lambda em, x: (x.abs() + 0.5).log(), lambda T, F, x: (x.abs() + 0.5).log()),
    "sqrt_abs": Op("unary", lambda em, x: (x.abs() + 0.25).sqrt(), lambda T, F, x: (x.abs() + 0.25).sqrt()),
    "rsqrt_abs": Op("unary", lambda em, x: (x.abs() + 1.0).rsqrt(), lambda T, F, x: (x.abs() + 1.0).rsqrt()),
    "clamp": Op("unary", lambda em, x, lo, hi: x.clamp(lo, hi), lambda T, F, x, lo, hi: x.clamp(lo, hi)),
    "scale": Op("scale", lambda em, x, c: x * c, lambda T, F, x, c: x * c),
    # elementwise, binary (broadcasting)
    "add": Op("binary", lambda em, a, b: a + b, lambda T, F, a, b: a + b),
    "sub": Op("binary", lambda em, a, b: a - b, lambda T, F, a, b: a - b),
    "mul": Op("binary", lambda em, a, b: a * b, lambda T, F, a, b: a * b),
    "div_safe": Op("binary", lambda em, a, b: a / (b.abs() + 1.0), lambda T, F, a, b: a / (b.abs() + 1.0)),
    "maximum": Op("binary", lambda em, a, b: a.maximum(b), lambda T, F, a, b: T.maximum(a, b)),
    "minimum": Op("binary", lambda em, a, b: a.minimum(b), lambda T, F, a, b: T.minimum(a, b)),
    # select: the condition is an exact value compared with an exact constant
    "where_gt": Op("select", lambda em, c, a, b, t: em.where(c > t, a, b),
                   lambda T, F, c, a, b, t: T.where(c > t, a, b)),
    "cast": Op("cast", lambda em, x, dtype: x.cast(getattr(em, dtype)), _t_cast),
}


def build_ember(prog) -> dict:
    """name -> Ember Tensor for every value of a FuzzProgram."""
    import ember as em
    vals: dict = {}
    for s in prog.steps:
        if s.op == "input":
            vals[s.out] = em.input(s.out, s.params["shape"], getattr(em, s.params["dtype"]))
        else:
            vals[s.out] = OPS[s.op].ember(em, *[vals[a] for a in s.args], **s.params)
    return vals


def kernel_count(prog) -> int:
    """Kernels the program lowers to with the default split thresholds (the generator's size cap:
    the same program for a seed on every machine)."""
    from ..kernel.lower import lower
    vals = build_ember(prog)
    return len(lower([vals[o].node for o in prog.outputs], list(prog.outputs)).kernels)
