"""ATen layer ops: normalisation, attention, dropout, losses, fused RNN cells."""
from __future__ import annotations

from ... import dtypes as dt
from ...ops import attention as A
from ...ops import indexing as I
from ...ops import loss as LS
from ...ops import norm as N
from ...tensor import _float, where
from .registry import Unsupported, UnsupportedOpError, aten

# ------------------------------------------------------------------------------------------------
# normalisation

def _cdt(x):
    return x.dtype if x.dtype in (dt.float32, dt.float64) else dt.float32


@aten("native_layer_norm.default")
def _native_layer_norm(x, normalized_shape, weight, bias, eps):
    y = N.layer_norm(x, list(normalized_shape), weight, bias, eps)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    xf = x.cast(_cdt(x))
    mu = xf.mean(axes, keepdim=True)
    d = xf - mu
    rstd = ((d * d).mean(axes, keepdim=True) + eps).rsqrt()
    return y, mu, rstd


@aten("layer_norm.default")
def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return N.layer_norm(x, list(normalized_shape), weight, bias, eps)


@aten("rms_norm.default")
def _rms_norm(x, normalized_shape, weight=None, eps=None):
    return N.rms_norm(x, list(normalized_shape), weight, eps)


@aten("native_group_norm.default")
def _native_group_norm(x, weight, bias, n, c, hxw, group, eps):
    y = N.group_norm(x, group, weight, bias, eps)
    xg = x.cast(_cdt(x)).reshape(n, group, -1)
    mu = xg.mean(2, keepdim=True)
    d = xg - mu
    rstd = ((d * d).mean(2, keepdim=True) + eps).rsqrt()
    return y, mu.reshape(n, group), rstd.reshape(n, group)


@aten("group_norm.default")
def _group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return N.group_norm(x, num_groups, weight, bias, eps)


def _batch_stats(x):
    axes = (0,) + tuple(range(2, x.ndim))
    xf = x.cast(_cdt(x))
    mu = xf.mean(axes, keepdim=True)
    d = xf - mu
    var = (d * d).mean(axes, keepdim=True)
    return mu.reshape(-1), (var + 0).reshape(-1), axes


@aten("_native_batch_norm_legit_functional.default")
def _bn_functional(x, weight, bias, running_mean, running_var, training, momentum, eps):
    if not training:
        y = N.batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
        return y, Unsupported("save_mean of batch norm in eval mode"), Unsupported("save_invstd"), \
            running_mean, running_var
    y, new_mean, new_var = N.batch_norm(x, running_mean, running_var, weight, bias, True, momentum, eps,
                                        return_stats=True)
    mu, var, _ = _batch_stats(x)
    return y, mu, (var + eps).rsqrt(), new_mean, new_var


@aten("_native_batch_norm_legit_no_training.default")
def _bn_no_training(x, weight, bias, running_mean, running_var, momentum, eps):
    y = N.batch_norm(x, running_mean, running_var, weight, bias, False, momentum, eps)
    return y, Unsupported("the mean output of batch norm in eval mode"), Unsupported("the invstd output")


@aten("_native_batch_norm_legit.no_stats")
def _bn_no_stats(x, weight, bias, training, momentum, eps):
    y = N.batch_norm(x, None, None, weight, bias, True, momentum, eps)
    mu, var, _ = _batch_stats(x)
    return y, mu, (var + eps).rsqrt()


@aten("_native_batch_norm_legit.default")
def _bn_legit(x, weight, bias, running_mean, running_var, training, momentum, eps):
    if training:
        raise UnsupportedOpError("_native_batch_norm_legit in training mode updates the running statistics "
                                 "in place (export the model with torch.export so the update is functional)")
    return _bn_no_training(x, weight, bias, running_mean, running_var, momentum, eps)


# ------------------------------------------------------------------------------------------------
# attention

@aten("scaled_dot_product_attention.default")
def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False):
    if dropout_p:
        raise UnsupportedOpError(f"scaled_dot_product_attention with dropout_p={dropout_p}: Ember cannot "
                                 "reproduce PyTorch's random numbers (use dropout_p=0 or eval mode)")
    if attn_mask is not None and is_causal:
        raise UnsupportedOpError("scaled_dot_product_attention with both attn_mask and is_causal")
    return A.scaled_dot_product_attention(q, k, v, attn_mask, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)


@aten("dropout.default", "feature_dropout.default")
def _dropout(x, p, train):
    """Reached only when eager draws nothing (eval mode, p = 0, an empty tensor): the identity. In
    training mode the op is drawn at call time instead (aten/random.py)."""
    return x


@aten("native_dropout.default")
def _native_dropout(x, p, train):
    return x, Unsupported("the mask output of native_dropout in eval mode")


@aten("alpha_dropout.default", "feature_alpha_dropout.default")
def _alpha_dropout(x, p, train):
    if train and p > 0:
        raise UnsupportedOpError(f"alpha dropout with p={p} in training mode: Ember draws plain dropout from "
                                 "torch's generator, not alpha dropout (call .eval() or use p=0)")
    return x


# ------------------------------------------------------------------------------------------------
# losses (reduction: 0 none, 1 mean, 2 sum, as ATen's enum)

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


@aten("mse_loss.default")
def _mse(x, y, reduction=1):
    return LS.mse_loss(x, y, _REDUCTION[reduction])


@aten("l1_loss.default")
def _l1(x, y, reduction=1):
    return LS.l1_loss(x, y, _REDUCTION[reduction])


@aten("smooth_l1_loss.default")
def _smooth_l1(x, y, reduction=1, beta=1.0):
    if beta == 0:
        return LS.l1_loss(x, y, _REDUCTION[reduction])
    return LS.smooth_l1_loss(x, y, _REDUCTION[reduction], beta)


@aten("huber_loss.default")
def _huber(x, y, reduction=1, delta=1.0):
    return LS.huber_loss(x, y, _REDUCTION[reduction], delta)


@aten("binary_cross_entropy.default")
def _bce(x, y, weight=None, reduction=1):
    if weight is None:
        return LS.binary_cross_entropy(x, y, _REDUCTION[reduction])
    return LS._reduce(LS.binary_cross_entropy(x, y, "none") * weight, _REDUCTION[reduction])


@aten("binary_cross_entropy_with_logits.default")
def _bce_logits(x, y, weight=None, pos_weight=None, reduction=1):
    x = _float(x)
    if pos_weight is None:
        loss = LS.binary_cross_entropy_with_logits(x, y, "none")
    else:  # (1 - y) * x + (1 + (pw - 1) * y) * softplus(-x), softplus written stably
        lw = (pos_weight - 1) * y + 1
        sp = (-x).relu() + (1.0 + (-x.abs()).exp()).log()
        loss = (1 - y) * x + lw * sp
    if weight is not None:
        loss = loss * weight
    return LS._reduce(loss, _REDUCTION[reduction])


def _nll(logp, target, weight, reduction, ignore_index):
    cls_axis = 1 if logp.ndim > 1 else 0
    c = logp.shape[cls_axis]
    t = I._int_index(target)
    valid = t != ignore_index
    safe = where(valid, t, 0)
    oh = I.one_hot(safe, c, logp.dtype)
    if cls_axis == 1 and logp.ndim > 2:
        oh = oh.movedim(-1, 1)
    picked = -(logp * oh).sum(cls_axis)
    w = valid.cast(logp.dtype)
    if weight is not None:
        w = w * I.index_select(weight, 0, safe.reshape(-1)).reshape(safe.node.shape)
    loss = picked * w
    if reduction == 0:
        return loss, Unsupported("total_weight of nll_loss with reduction='none'")
    total = w.sum()
    if reduction == 2:
        return loss.sum(), total
    return loss.sum() / total, total


@aten("nll_loss_forward.default", "nll_loss2d_forward.default")
def _nll_loss_forward(logp, target, weight, reduction, ignore_index):
    return _nll(logp, target, weight, reduction, ignore_index)


@aten("nll_loss.default", "nll_loss_nd.default", "nll_loss2d.default")
def _nll_loss(logp, target, weight=None, reduction=1, ignore_index=-100):
    return _nll(logp, target, weight, reduction, ignore_index)[0]


# ------------------------------------------------------------------------------------------------
# fused RNN cells (what torch.export leaves of nn.GRUCell / nn.LSTMCell on CUDA)

def _gate_sum(g, bias):
    return g if bias is None else g + bias


@aten("_thnn_fused_lstm_cell.default")
def _fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    gates = _gate_sum(input_gates, input_bias) + _gate_sum(hidden_gates, hidden_bias)
    h = gates.shape[1] // 4
    i, f, g, o = gates.split([h, h, h, h], 1)
    cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
    hy = o.sigmoid() * cy.tanh()
    return hy, cy, Unsupported("the fused LSTM cell's workspace (saved for backward only)")


@aten("_thnn_fused_gru_cell.default")
def _fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    ig, hg = _gate_sum(input_gates, input_bias), _gate_sum(hidden_gates, hidden_bias)
    h = ig.shape[1] // 3
    ir_, iz, in_ = ig.split([h, h, h], 1)
    hr, hz, hn = hg.split([h, h, h], 1)
    r, z = (ir_ + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return (1.0 - z) * n + z * hx, Unsupported("the fused GRU cell's workspace (saved for backward only)")
