"""Losses: mse, l1, cross-entropy (class indices or probabilities, label smoothing), nll, bce."""
from __future__ import annotations

from ..tensor import ShapeError, Tensor, _float, where
from .indexing import one_hot

__all__ = ["mse_loss", "l1_loss", "cross_entropy", "nll_loss", "binary_cross_entropy_with_logits",
           "binary_cross_entropy", "huber_loss", "smooth_l1_loss"]


def _reduce(x: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return x.mean()
    if reduction == "sum":
        return x.sum()
    if reduction == "none":
        return x
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(pred: Tensor, target, reduction: str = "mean") -> Tensor:
    d = _float(pred) - target
    return _reduce(d * d, reduction)


def l1_loss(pred: Tensor, target, reduction: str = "mean") -> Tensor:
    return _reduce((_float(pred) - target).abs(), reduction)


def huber_loss(pred: Tensor, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    d = (_float(pred) - target).abs()
    return _reduce(where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def smooth_l1_loss(pred: Tensor, target, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    d = (_float(pred) - target).abs()
    return _reduce(where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def _masked_reduce(per: Tensor, valid: Tensor | None, reduction: str) -> Tensor:
    """Reduce per-target losses, leaving out ignored targets; 'mean' averages over the targets kept
    (torch: an ignore_index target counts neither in the sum nor in the divisor)."""
    if valid is None:
        return _reduce(per, reduction)
    per = where(valid, per, 0.0)
    if reduction == "mean":
        return per.sum() / valid.sum().cast(per.dtype)
    return _reduce(per, reduction)


def _class_targets(target: Tensor, c, cls_axis: int, ndim: int, dtype, ignore_index: int):
    """(one-hot targets laid out like the scores, mask of targets not ignored)."""
    valid = target != ignore_index
    oh = one_hot(where(valid, target, 0), c, dtype)  # (N, ..., C)
    if cls_axis == 1 and ndim > 2:
        oh = oh.movedim(-1, 1)
    return oh, valid


def nll_loss(logp: Tensor, target: Tensor, reduction: str = "mean", *, ignore_index: int = -100) -> Tensor:
    """logp (N, C, ...) or (C,), target integer class indices (N, ...); targets equal to
    ignore_index (torch's default -100) are left out."""
    cls_axis = 1 if logp.ndim > 1 else 0
    oh, valid = _class_targets(target, logp.shape[cls_axis], cls_axis, logp.ndim, logp.dtype, ignore_index)
    picked = -(logp * oh).sum(cls_axis)
    return _masked_reduce(picked, valid, reduction)


def cross_entropy(logits: Tensor, target: Tensor, reduction: str = "mean", label_smoothing: float = 0.0, *,
                  ignore_index: int = -100) -> Tensor:
    """torch.nn.functional.cross_entropy: logits (N, C, ...) or (C,); target class indices (N, ...)
    (those equal to ignore_index, torch's default -100, are left out) or class probabilities with
    the logits' shape."""
    cls_axis = 1 if logits.ndim > 1 else 0
    logp = _float(logits).log_softmax(cls_axis)
    c = logits.shape[cls_axis]
    valid = None
    if target.dtype.is_float:
        if tuple(target.shape) != tuple(logits.shape):
            raise ShapeError(f"cross_entropy: probability targets {target.shape} must match logits {logits.shape}")
        tgt = target
    else:
        if target.dtype.is_bool:
            raise TypeError("cross_entropy targets must be class indices (ints) or probabilities (floats)")
        tgt, valid = _class_targets(target, c, cls_axis, logits.ndim, logp.dtype, ignore_index)
    if label_smoothing:
        tgt = tgt * (1 - label_smoothing) + label_smoothing / c
    return _masked_reduce(-(logp * tgt).sum(cls_axis), valid, reduction)


def binary_cross_entropy_with_logits(logits: Tensor, target, reduction: str = "mean") -> Tensor:
    x = _float(logits)
    # max(x, 0) - x*t + log(1 + exp(-|x|)): stable for large |x|
    loss = x.relu() - x * target + (1.0 + (-x.abs()).exp()).log()
    return _reduce(loss, reduction)


def binary_cross_entropy(prob: Tensor, target, reduction: str = "mean") -> Tensor:
    p = _float(prob)
    logp = p.log().maximum(-100.0)
    log1mp = (1.0 - p).log().maximum(-100.0)
    return _reduce(-(target * logp + (1.0 - target) * log1mp), reduction)
