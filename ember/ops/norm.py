"""Normalisations: layer_norm, rms_norm, group_norm, batch_norm — means and variances over axes,
computed in float32 (or wider) even for half-precision inputs, as PyTorch does."""
from __future__ import annotations

from .. import dtypes as dt
from .. import symbolic as sm
from ..tensor import ShapeError, Tensor

__all__ = ["layer_norm", "rms_norm", "group_norm", "batch_norm", "normalize"]


def _compute_dtype(x: Tensor):
    return x.dtype if x.dtype in (dt.float32, dt.float64) else dt.float32


def _check_trailing(x: Tensor, normalized_shape, what: str) -> tuple:
    """Axes of the trailing normalized_shape; its entries may be ints or dimension names."""
    ns = (normalized_shape,) if isinstance(normalized_shape, (int, str, sm.Expr)) else tuple(normalized_shape)
    if len(ns) > x.ndim or tuple(sm.sym(s) for s in ns) != tuple(x.node.shape[x.ndim - len(ns):]):
        raise ShapeError(f"{what}: normalized_shape {ns} does not match the input's trailing dims {x.shape}")
    return tuple(range(x.ndim - len(ns), x.ndim))


def _check_param(op: str, what: str, t, shape: tuple) -> None:
    """Affine parameters and running statistics must have exactly the shape the op expects."""
    if t is not None and tuple(t.shape) != tuple(shape):
        raise ShapeError(f"{op}: {what} has shape {t.shape}, expected {tuple(shape)}")


def layer_norm(x: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    axes = _check_trailing(x, normalized_shape, "layer_norm")
    ns = tuple(x.shape[axes[0]:])
    _check_param("layer_norm", "weight", weight, ns)
    _check_param("layer_norm", "bias", bias, ns)
    xf = x.cast(_compute_dtype(x))
    mu = xf.mean(axes, keepdim=True)
    d = xf - mu
    var = (d * d).mean(axes, keepdim=True)
    y = d * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.cast(x.dtype)


def rms_norm(x: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    axes = _check_trailing(x, normalized_shape, "rms_norm")
    _check_param("rms_norm", "weight", weight, tuple(x.shape[axes[0]:]))
    cd = _compute_dtype(x)
    if eps is None:  # torch's default: machine epsilon of the input dtype
        import ml_dtypes  # numpy's finfo does not know bfloat16 (numpy 2.x); ml_dtypes' knows all
        eps = float(ml_dtypes.finfo(x.dtype.np).eps)
    xf = x.cast(cd)
    y = xf * ((xf * xf).mean(axes, keepdim=True) + eps).rsqrt()
    if weight is not None:
        y = y * weight
    return y.cast(x.dtype)


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    if x.ndim < 2:
        raise ShapeError(f"group_norm expects (N, C, ...), got {x.shape}")
    n, c = x.node.shape[0], x.shape[1]
    if c % num_groups:
        raise ShapeError(f"group_norm: {c} channels are not divisible into {num_groups} groups")
    _check_param("group_norm", "weight", weight, (c,))
    _check_param("group_norm", "bias", bias, (c,))
    rest = list(x.node.shape[2:])
    xg = x.cast(_compute_dtype(x)).reshape([n, num_groups, c // num_groups] + rest)
    axes = tuple(range(2, xg.ndim))
    mu = xg.mean(axes, keepdim=True)
    d = xg - mu
    var = (d * d).mean(axes, keepdim=True)
    y = (d * (var + eps).rsqrt()).reshape(x.node.shape)
    bshape = [1, c] + [1] * len(rest)
    if weight is not None:
        y = y * weight.reshape(bshape)
    if bias is not None:
        y = y + bias.reshape(bshape)
    return y.cast(x.dtype)


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5,
               return_stats: bool = False):
    """Inference (running statistics) or training (batch statistics). With return_stats=True in
    training mode also returns the updated (running_mean, running_var), as torch updates them."""
    if x.ndim < 2:
        raise ShapeError(f"batch_norm expects (N, C, ...), got {x.shape}")
    c = x.shape[1]
    for what, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        _check_param("batch_norm", what, t, (c,))
    bshape = [1, c] + [1] * (x.ndim - 2)
    xf = x.cast(_compute_dtype(x))
    if training:
        axes = (0,) + tuple(range(2, x.ndim))
        mu = xf.mean(axes, keepdim=True)
        d = xf - mu
        var = (d * d).mean(axes, keepdim=True)
        y = d * (var + eps).rsqrt()
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm in inference mode needs running_mean and running_var")
        y = (xf - running_mean.reshape(bshape)) * (running_var.reshape(bshape) + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(bshape)
    if bias is not None:
        y = y + bias.reshape(bshape)
    y = y.cast(x.dtype)
    if not return_stats:
        return y
    if not training or running_mean is None:
        return y, running_mean, running_var
    count = 1
    for a in axes:
        s = x.shape[a]
        if not isinstance(s, int):
            raise ShapeError("batch statistics update needs static shapes")
        count *= s
    new_mean = running_mean * (1 - momentum) + mu.reshape(-1) * momentum
    unbiased = var.reshape(-1) * (count / max(count - 1, 1))
    new_var = running_var * (1 - momentum) + unbiased * momentum
    return y, new_mean, new_var


def normalize(x: Tensor, p: float = 2.0, axis: int = 1, eps: float = 1e-12) -> Tensor:
    if p != 2.0:
        raise NotImplementedError("normalize supports p=2")
    n = (x * x).sum(axis, keepdim=True).sqrt()
    return x / n.maximum(eps)
