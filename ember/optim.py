"""Optimizers as graph transforms.

An optimizer step is ordinary graph: ``opt.update(params, grads, state, lr, step)`` returns the new
parameters and the new optimizer state as Tensors built from the old ones, so forward, backward and
update compile (and are searched) together. Nothing is stored in the optimizer object except its
hyper-parameters:

* ``lr`` and ``step`` are *runtime inputs* (0-d tensors, e.g. ``em.input("lr", ())``), so a learning
  rate schedule or the step count of Adam's bias correction never changes the graph and never
  recompiles. ``step`` is the 1-based number of the update being taken (torch's ``state["step"]``
  after its increment). Plain Python numbers work too, at the price of one graph per value.
* Optimizer state (momentum buffers, Adam's moments) is graph inputs and outputs: `init_state`
  gives the initial arrays, `state_inputs` the graph inputs to read them from, and the caller feeds
  each step's new state back in as the next step's state (see ember/train.py).

State keys are ``"<param name>.<slot>"`` (``"fc1.weight.exp_avg"``); `input_name` turns any key
into the identifier used for its graph input. The arithmetic follows torch.optim (SGD with momentum,
dampening, Nesterov and weight decay; Adam and AdamW with bias correction and AMSGrad), so updates
match PyTorch step for step. Half-precision parameters are updated in float32 and rounded back;
their state is kept in the parameter's dtype, as torch keeps it.
"""
from __future__ import annotations

import math
import re
from typing import Mapping

import numpy as np

from . import dtypes as dt
from .tensor import Tensor, _as_tensor, where
from .tensor import input as _input

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "input_name"]


def input_name(key: str) -> str:
    """A graph-input identifier for a parameter or state key ("fc1.weight.exp_avg" -> "fc1_weight_exp_avg")."""
    name = re.sub(r"\W", "_", key)
    return name if name and not name[0].isdigit() else "_" + name


def _compute_dtype(d: dt.DType) -> dt.DType:
    return d if d in (dt.float32, dt.float64) else dt.float32


def _scalar(x, dtype: dt.DType, what: str) -> Tensor:
    t = _as_tensor(x, dt.float32)
    if t.ndim != 0:
        raise ValueError(f"{what} must be a 0-d tensor or a number, got shape {t.shape}")
    return t.cast(dtype)


class Optimizer:
    """Base class: subclasses name their state slots and implement `_step` for one parameter."""

    slots: tuple = ()

    # ---------------------------------------------------------------- state
    def state_keys(self, name: str) -> list[str]:
        return [f"{name}.{s}" for s in self.slots]

    def init_state(self, params: Mapping[str, object]) -> dict[str, np.ndarray]:
        """Zero state for each parameter (arrays, Tensors, or anything with .shape and .dtype)."""
        out = {}
        for name, p in params.items():
            shape = tuple(int(s) for s in p.shape)
            npd = p.dtype.np if isinstance(p.dtype, dt.DType) else np.dtype(p.dtype)
            for key in self.state_keys(name):
                out[key] = np.zeros(shape, npd)
        return out

    def state_inputs(self, params: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Graph inputs for the state of each parameter (named with `input_name`)."""
        return {key: _input(input_name(key), p.node.shape, p.dtype)
                for name, p in params.items() for key in self.state_keys(name)}

    # ---------------------------------------------------------------- the transform
    def update(self, params: Mapping[str, Tensor], grads: Mapping[str, Tensor], state: Mapping[str, Tensor],
               lr, step) -> tuple[dict, dict]:
        """(new params, new state) as graph tensors, for one optimizer step."""
        new_params, new_state = {}, {}
        for name, p in params.items():
            if name not in grads:
                raise KeyError(f"no gradient for parameter {name!r}")
            gr = grads[name]
            if tuple(gr.shape) != tuple(p.shape):
                raise ValueError(f"gradient of {name!r} has shape {gr.shape}, parameter {p.shape}")
            keys = self.state_keys(name)
            missing = [k for k in keys if k not in state]
            if missing:
                raise KeyError(f"optimizer state {missing} missing (use init_state / state_inputs)")
            cd = _compute_dtype(p.dtype)
            slots = {s: state[k].cast(cd) for s, k in zip(self.slots, keys)}
            new_p, new_slots = self._step(p.cast(cd), gr.cast(cd), slots, _scalar(lr, cd, "lr"),
                                          _scalar(step, cd, "step"))
            new_params[name] = new_p.cast(p.dtype)
            for s, k in zip(self.slots, keys):
                new_state[k] = new_slots[s].cast(state[k].dtype)
        return new_params, new_state

    def _step(self, p: Tensor, g: Tensor, slots: dict, lr: Tensor, step: Tensor) -> tuple[Tensor, dict]:
        raise NotImplementedError


class SGD(Optimizer):
    """torch.optim.SGD: weight decay (L2, added to the gradient), momentum with dampening, Nesterov."""

    def __init__(self, lr: float | None = None, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening (as in torch)")
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov
        self.slots = ("momentum_buffer",) if momentum else ()

    def _step(self, p, g, slots, lr, step):
        d = g + p * self.weight_decay if self.weight_decay else g
        out = {}
        if self.momentum:
            buf = slots["momentum_buffer"] * self.momentum + d * (1.0 - self.dampening)
            if self.dampening:
                buf = where(step < 1.5, d, buf)  # torch's first step takes the gradient undampened
            out["momentum_buffer"] = buf
            d = d + buf * self.momentum if self.nesterov else buf
        return p - lr * d, out


class AdamW(Optimizer):
    """torch.optim.AdamW: decoupled weight decay, bias-corrected moments, optional AMSGrad."""

    decoupled = True

    def __init__(self, lr: float | None = None, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False):
        b1, b2 = betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"betas must be in [0, 1), got {betas}")
        self.lr, self.betas, self.eps, self.weight_decay, self.amsgrad = lr, (b1, b2), eps, weight_decay, amsgrad
        self.slots = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())

    def _step(self, p, g, slots, lr, step):
        b1, b2 = self.betas
        if self.weight_decay:
            if self.decoupled:
                p = p * (1.0 - lr * self.weight_decay)
            else:
                g = g + p * self.weight_decay
        m = slots["exp_avg"] * b1 + g * (1.0 - b1)
        v = slots["exp_avg_sq"] * b2 + g * g * (1.0 - b2)
        out = {"exp_avg": m, "exp_avg_sq": v}
        if self.amsgrad:
            v = slots["max_exp_avg_sq"].maximum(v)
            out["max_exp_avg_sq"] = v
        # 1 - beta^step with step a runtime input: beta^step = 2^(step·log2 beta)
        bc1 = 1.0 - (step * math.log2(b1)).exp2() if b1 > 0 else 1.0
        bc2 = 1.0 - (step * math.log2(b2)).exp2() if b2 > 0 else 1.0
        denom = v.sqrt() / (bc2.sqrt() if isinstance(bc2, Tensor) else 1.0) + self.eps
        step_size = lr / bc1 if isinstance(bc1, Tensor) else lr
        return p - step_size * (m / denom), out


class Adam(AdamW):
    """torch.optim.Adam: like AdamW but weight decay is L2 (added to the gradient); default 0."""

    decoupled = False

    def __init__(self, lr: float | None = None, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False):
        super().__init__(lr, betas, eps, weight_decay, amsgrad)
