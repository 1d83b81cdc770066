"""One training step as one graph: forward, backward (autograd.py) and the optimizer update
(optim.py), built together so they compile and are searched together.

    step = make_train_step(model_fn, loss_fn, params, em.optim.AdamW(), batch={"x": ((64, 784), em.float32), ...})
    feed = step.initial_feed(params)                   # parameters + zero optimizer state
    for k in range(1, n + 1):
        loss, feed = step.run_reference(feed, batch_arrays, lr=schedule(k), step=k)

Every parameter and state tensor is a graph input, and the step's graph outputs carry the same names,
so each output is fed back into the input of its name on the next step (a compiled backend can bind
the output buffer to the input slot without a copy). ``lr`` and ``step`` are 0-d float32 inputs:
changing them never rebuilds the graph. `run_reference` runs the step on the numpy reference; the
compiled CPU/CUDA step will take the same feed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from . import dtypes as dt
from .autograd import grad
from .optim import Optimizer, input_name
from .tensor import Tensor, input as _input

__all__ = ["TrainStep", "make_train_step"]


@dataclass
class TrainStep:
    outputs: dict            # "loss" plus, under their input names, the new parameters and state
    inputs: list             # every graph input name (parameters, state, batch, "lr", "step")
    param_inputs: dict       # parameter name -> input name
    state_inputs: dict       # optimizer state key -> input name
    batch_inputs: list       # names of the per-step data inputs
    optimizer: Optimizer
    lr_name: str = "lr"
    step_name: str = "step"

    @property
    def feedback(self) -> dict:
        """output name -> the input it feeds on the next step (the same name)."""
        return {k: k for k in self.outputs if k != "loss"}

    def initial_feed(self, params: Mapping[str, np.ndarray]) -> dict:
        """Initial values of the fed-back inputs: the parameters and zero optimizer state."""
        feed = {self.param_inputs[n]: np.asarray(a) for n, a in params.items()}
        for key, arr in self.optimizer.init_state(params).items():
            feed[self.state_inputs[key]] = arr
        return feed

    def run_reference(self, feed: Mapping[str, np.ndarray], batch: Mapping[str, np.ndarray], lr: float, step: int):
        """One step on the numpy reference: (loss, next feed)."""
        from .reference import reference
        arrays = {**feed, **batch, self.lr_name: np.array(lr, np.float32), self.step_name: np.array(step, np.float32)}
        read = self.graph_inputs  # e.g. plain SGD never reads "step"
        outs = reference(self.outputs, **{k: v for k, v in arrays.items() if k in read})
        loss = outs.pop("loss")
        return loss, outs

    @property
    def graph_inputs(self) -> set:
        """The input names the step's graph actually reads."""
        from .graph import inputs_of
        return {n.arg for n in inputs_of([t.node for t in self.outputs.values()])}

    def params_from_feed(self, feed: Mapping[str, np.ndarray]) -> dict:
        return {n: feed[i] for n, i in self.param_inputs.items()}


def make_train_step(model_fn: Callable, loss_fn: Callable | None, params: Mapping[str, np.ndarray],
                    optimizer: Optimizer, batch: Mapping[str, tuple], *, lr_name: str = "lr",
                    step_name: str = "step") -> TrainStep:
    """Build the forward + backward + update graph of one training step.

    ``params``: name -> initial array (its shape and dtype define the parameter input).
    ``batch``: name -> (shape, dtype) of each per-step data input (dims may be named).
    ``model_fn(params, batch)`` gets dicts of Tensors and returns the prediction;
    ``loss_fn(prediction, batch)`` returns the 0-d loss (or pass ``loss_fn=None`` and have
    model_fn return the loss itself).
    """
    p_in = {n: input_name(n) for n in params}
    if len(set(p_in.values())) != len(p_in):
        raise ValueError(f"parameter names {sorted(params)} collide once made identifiers")
    p_t = {n: _input(p_in[n], np.asarray(a).shape, dt.as_dtype(np.asarray(a).dtype)) for n, a in params.items()}
    b_t = {n: _input(n, shape, dt.as_dtype(d)) for n, (shape, d) in batch.items()}
    s_t = optimizer.state_inputs(p_t)
    s_in = {k: input_name(k) for k in s_t}
    names = list(p_in.values()) + list(s_in.values()) + list(b_t) + [lr_name, step_name]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"input names {dup} are used twice (parameters, optimizer state, batch, lr, step)")
    pred = model_fn(p_t, b_t)
    loss = pred if loss_fn is None else loss_fn(pred, b_t)
    if not isinstance(loss, Tensor) or loss.ndim != 0:
        raise ValueError(f"the loss must be a 0-d Tensor, got {loss!r}")
    names_order = list(params)
    grads = dict(zip(names_order, grad(loss, [p_t[n] for n in names_order])))
    lr = _input(lr_name, (), dt.float32)
    step = _input(step_name, (), dt.float32)
    new_p, new_s = optimizer.update(p_t, grads, s_t, lr, step)
    outputs = {"loss": loss}
    outputs.update({p_in[n]: t for n, t in new_p.items()})
    outputs.update({s_in[k]: t for k, t in new_s.items()})
    return TrainStep(outputs, names, p_in, s_in, list(b_t), optimizer, lr_name, step_name)
