"""One training step as one graph: forward, backward (ember/autograd) and the optimizer update
(optim.py), built together so they compile and are searched together.

Two levels:

* `compile_train` (exported as ``em.compile_train``) takes an ``nn.Module``, a loss function, an
  optimizer and an example batch, builds the step graph, compiles it with `em.compile` and returns a
  `CompiledTrainStep`: call it with a batch (and the learning rate) to take one step; it returns the
  loss. Parameters and optimizer state live in the step object between calls::

      step = em.compile_train(model, lambda m, b: em.cross_entropy(m(b["x"]), b["y"]),
                              em.optim.AdamW(lr=1e-3), {"x": x0, "y": y0}, device="cpu")
      for k, (x, y) in enumerate(batches):
          loss = step({"x": x, "y": y}, lr=schedule(k))
      step.write_back()                      # the trained values into the module (or step.parameters())

* `make_train_step` / `make_module_train_step` build the graph only (a `TrainStep`), to run on the
  numpy reference (`TrainStep.run_reference`) or to compile yourself::

      ts = make_train_step(model_fn, loss_fn, params, em.optim.AdamW(), batch={"x": ((64, 784), em.float32)})
      feed = ts.initial_feed(params)                 # parameters + zero optimizer state
      for k in range(1, n + 1):
          loss, feed = ts.run_reference(feed, batch_arrays, lr=schedule(k), step=k)

Every parameter and state tensor is a graph input, and the step's graph outputs carry the same names,
so each output is fed back into the input of its name on the next step. ``lr`` and ``step`` (the
1-based number of the update, for Adam's bias correction) are 0-d float32 inputs: changing them
never rebuilds or recompiles the graph.

A module's parameters enter its forward graph as constants (DATA nodes, see nn/parameter.py). The
module path differentiates with respect to those nodes, builds the update, and then replaces each
trained parameter's node by a graph input (`_replace_leaves`), so the compiled program takes the
weights as arguments instead of baking them in. BatchNorm running statistics are handled the same way:
the buffer becomes an input and its new value (``Module.buffer_updates``) an output fed back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from . import dtypes as dt
from . import graph as g
from .arrays import to_numpy
from .autograd import grad
from .graph import Node
from .ops.collective import all_reduce
from .ops.movement import concat, split
from .optim import Optimizer, input_name
from .tensor import Tensor
from .tensor import input as _input

__all__ = ["TrainStep", "CompiledTrainStep", "make_train_step", "make_module_train_step", "compile_train",
           "compile_step"]


@dataclass
class TrainStep:
    outputs: dict            # "loss" plus, under their input names, the new parameters, state and buffers
    inputs: list             # every graph input name (parameters, state, batch, "lr", "step")
    param_inputs: dict       # parameter name -> input name
    state_inputs: dict       # optimizer state key -> input name
    batch_inputs: list       # names of the per-step data inputs
    optimizer: Optimizer
    lr_name: str = "lr"
    step_name: str = "step"
    buffer_inputs: dict = field(default_factory=dict)   # buffer name -> input name (fed back, like params)
    counters: dict = field(default_factory=dict)        # integer buffer -> its increment per step (host side)
    batch_specs: dict = field(default_factory=dict)     # batch name -> (shape, dtype)

    @property
    def feedback(self) -> dict:
        """output name -> the input it feeds on the next step (the same name)."""
        return {k: k for k in self.outputs if k != "loss"}

    def initial_feed(self, params: Mapping[str, np.ndarray], buffers: Mapping[str, np.ndarray] | None = None) -> dict:
        """Initial values of the fed-back inputs: the parameters, zero optimizer state, the buffers."""
        missing = [n for n in self.param_inputs if n not in params]
        if missing:
            raise KeyError(f"initial values missing for parameter(s) {missing}")
        feed = {self.param_inputs[n]: np.asarray(params[n]) for n in self.param_inputs}
        for key, arr in self.optimizer.init_state({n: np.asarray(params[n]) for n in self.param_inputs}).items():
            feed[self.state_inputs[key]] = arr
        for n, i in self.buffer_inputs.items():
            if buffers is None or n not in buffers:
                raise KeyError(f"initial value missing for buffer {n!r}")
            feed[i] = np.asarray(buffers[n])
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
        return {n.arg for n in g.inputs_of([t.node for t in self.outputs.values()])}

    def params_from_feed(self, feed: Mapping[str, np.ndarray]) -> dict:
        return {n: feed[i] for n, i in self.param_inputs.items()}


def _batch_specs(batch: Mapping) -> dict:
    """name -> (shape, DType) from arrays or (shape, dtype) pairs."""
    if not isinstance(batch, Mapping) or not batch:
        raise TypeError("the batch must be a non-empty dict of name -> array (or (shape, dtype))")
    out = {}
    for n, v in batch.items():
        if not isinstance(n, str) or not n.isidentifier():
            raise ValueError(f"batch input names must be identifiers, got {n!r}")
        if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], (tuple, list)):
            out[n] = (tuple(v[0]), dt.as_dtype(v[1]))
        else:
            a = to_numpy(v)
            out[n] = (tuple(a.shape), dt.as_dtype(a.dtype))
    return out


def _check_names(names: list) -> None:
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"input names {dup} are used twice (parameters, optimizer state, buffers, batch, lr, step)")


def _check_loss(loss) -> None:
    if not isinstance(loss, Tensor):
        raise TypeError(f"the loss function must return an Ember Tensor, got {type(loss).__name__}")
    if loss.ndim != 0:
        raise ValueError(f"the loss must be a 0-d Tensor, got shape {loss.shape} (reduce it, e.g. .mean())")
    if not loss.dtype.is_float:
        raise TypeError(f"the loss must be floating point, got {loss.dtype.name}")


def make_train_step(model_fn: Callable, loss_fn: Callable | None, params: Mapping[str, np.ndarray],
                    optimizer: Optimizer, batch: Mapping[str, tuple], *, lr_name: str = "lr",
                    step_name: str = "step", data_parallel: bool = False) -> TrainStep:
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
    specs = _batch_specs(batch)
    b_t = {n: _input(n, shape, d) for n, (shape, d) in specs.items()}
    s_t = optimizer.state_inputs(p_t)
    s_in = {k: input_name(k) for k in s_t}
    names = list(p_in.values()) + list(s_in.values()) + list(b_t) + [lr_name, step_name]
    _check_names(names)
    pred = model_fn(p_t, b_t)
    loss = pred if loss_fn is None else loss_fn(pred, b_t)
    _check_loss(loss)
    names_order = list(params)
    grads = dict(zip(names_order, grad(loss, [p_t[n] for n in names_order])))
    loss, grads = _data_parallel(loss, grads, data_parallel)
    lr = _input(lr_name, (), dt.float32)
    step = _input(step_name, (), dt.float32)
    new_p, new_s = optimizer.update(p_t, grads, s_t, lr, step)
    outputs = {"loss": loss}
    outputs.update({p_in[n]: t for n, t in new_p.items()})
    outputs.update({s_in[k]: t for k, t in new_s.items()})
    return TrainStep(outputs, names, p_in, s_in, list(b_t), optimizer, lr_name, step_name, batch_specs=specs)


BUCKET_ELEMS = 1 << 20  # gradient elements per all-reduce (data parallelism)


def _data_parallel(loss: Tensor, grads: dict, on: bool) -> tuple:
    """Data parallelism: every rank runs the step on its own slice of the global batch; the loss and
    the gradients are averaged over the ranks before the update, so every rank applies the same
    update to the same parameters (with equal slices, the step on the whole global batch of a loss
    that is a mean). Gradients travel in buckets of about BUCKET_ELEMS elements, the last
    parameters' (which the backward finishes first) first: a bucket's all-reduce can run while the
    backward still computes the earlier layers' gradients (the CPU executor overlaps them)."""
    from .comm import current
    world = current().world
    if not on or world == 1:
        return loss, grads
    out: dict = {}
    names = list(grads)[::-1]
    loss = all_reduce(loss, world) * (1.0 / world)
    while names:
        bucket, size = [], 0
        while names and (not bucket or size + _numel(grads[names[0]]) <= BUCKET_ELEMS):
            size += _numel(grads[names[0]])
            bucket.append(names.pop(0))
        flat = [grads[k].reshape(-1).cast(dt.float32) for k in bucket]
        total = all_reduce(concat(flat) if len(flat) > 1 else flat[0], world) * (1.0 / world)
        parts = split(total, [f.shape[0] for f in flat]) if len(flat) > 1 else [total]
        out.update({k: p.reshape(grads[k].shape).cast(grads[k].dtype) for k, p in zip(bucket, parts)})
    return loss, {k: out[k] for k in grads}


def _numel(t: Tensor) -> int:
    n = 1
    for s in t.node.shape:
        n *= int(s.value) if getattr(s, "is_const", False) else 1 << 20
    return n


# ------------------------------------------------------------------------------------------------
# nn.Module training steps

def _replace_leaves(roots: list, mapping: dict) -> list:
    """The graphs of ``roots`` rebuilt with every leaf node in ``mapping`` replaced by its value (a node
    of the same shape and dtype); unchanged subgraphs are shared, not copied."""
    new: dict = {}
    for n in g.toposort(roots):
        if n in mapping:
            new[n] = mapping[n]
        elif not n.srcs:
            new[n] = n
        else:
            srcs = tuple(new[s] for s in n.srcs)
            new[n] = n if all(a is b for a, b in zip(srcs, n.srcs)) else Node(n.op, srcs, n.arg, n.dtype, n.shape)
    return [new[r] for r in roots]


def _find_data_nodes(nodes: list, holders: list) -> dict:
    """{name: DATA node} for each (name, Parameter/Buffer) whose array the graph holds as a constant.
    A holder's graph node wraps its very array (nn/parameter.py); a node named like the holder with
    equal content is accepted too."""
    data = [n for n in nodes if n.op == g.DATA]
    by_id = {id(n.arg.array): n for n in data}
    found = {}
    for name, p in holders:
        n = by_id.get(id(p.data))
        if n is None:
            n = next((d for d in data if d.arg.name == name and d.arg.array.shape == p.data.shape
                      and np.array_equal(d.arg.array, p.data)), None)
        if n is not None:
            found[name] = n
    return found


_MODULE_METHODS = ("named_parameters", "named_buffers", "named_modules", "buffer_updates", "get_buffer",
                   "load_state_dict")


def make_module_train_step(model, loss_fn: Callable, optimizer: Optimizer, batch: Mapping, *,
                           lr_name: str = "lr", step_name: str = "step", data_parallel: bool = False) -> TrainStep:
    """The training-step graph of an ``nn.Module``: ``loss_fn(model, batch_tensors)`` must return the
    0-d loss (``batch_tensors``: name -> graph input, built from ``batch``, a dict of arrays or of
    (shape, dtype)). Every parameter with ``requires_grad`` that the loss reads is trained; one it does
    not read is left unchanged (torch skips parameters without a gradient)."""
    # duck-typed (train.py imports neither nn nor the runtime): what the step needs of a module
    if not all(callable(getattr(model, a, None)) for a in _MODULE_METHODS):
        raise TypeError(f"model must be an ember.nn.Module, got {type(model).__name__} "
                        "(for a function of parameter dicts use make_train_step)")
    if not callable(loss_fn):
        raise TypeError("loss_fn must be a function (model, batch) -> 0-d loss Tensor")
    for name, m in model.named_modules():
        if m.training and getattr(m, "track_running_stats", False) and getattr(m, "momentum", 0) is None:
            raise NotImplementedError(f"{name or 'model'}: BatchNorm with momentum=None (a cumulative average "
                                      "whose factor changes every step) cannot be compiled into a fixed step "
                                      "graph; give it a momentum")
    specs = _batch_specs(batch)
    b_t = {n: _input(n, shape, d) for n, (shape, d) in specs.items()}
    before = {k: id(t) for k, t in model.buffer_updates().items()}
    loss = loss_fn(model, b_t)
    _check_loss(loss)
    updates = {k: t for k, t in model.buffer_updates().items() if before.get(k) != id(t)}

    nodes = g.toposort([loss.node] + [t.node for t in updates.values()])
    trainable = [(k, p) for k, p in model.named_parameters() if p.requires_grad]
    params = _find_data_nodes(nodes, trainable)
    if not params:
        raise ValueError("the loss does not read any trainable parameter of the model "
                         "(does loss_fn call the model it was given?)")
    buffers = _find_data_nodes(nodes, [(k, b) for k, b in model.named_buffers() if k in updates])

    p_t = {k: Tensor(n) for k, n in params.items()}
    p_in = {k: input_name(k) for k in params}
    s_t = optimizer.state_inputs(p_t)
    s_in = {k: input_name(k) for k in s_t}
    buf_in, counters, buf_out = {}, {}, {}
    for k, t in updates.items():
        if k in buffers and t.dtype.is_float:
            buf_in[k] = input_name(k)
            buf_out[buf_in[k]] = t
        elif not t.dtype.is_float and not g.inputs_of([t.node]) and t.node.op in (g.CONST, g.VIEW):
            # a step counter (BatchNorm's num_batches_tracked = count + 1): advanced on the host
            val = np.asarray(to_numpy(model.get_buffer(k).data))
            from .reference import reference
            counters[k] = int(np.asarray(reference(t)) - val)
        else:
            raise NotImplementedError(f"buffer update {k!r} ({t.dtype.name}) cannot be fed back by a compiled step")
    names = (list(p_in.values()) + list(s_in.values()) + list(buf_in.values()) + list(b_t) + [lr_name, step_name])
    _check_names(names)

    order = list(params)
    grads = dict(zip(order, grad(loss, [p_t[k] for k in order])))
    loss, grads = _data_parallel(loss, grads, data_parallel)
    lr = _input(lr_name, (), dt.float32)
    step = _input(step_name, (), dt.float32)
    new_p, new_s = optimizer.update(p_t, grads, s_t, lr, step)
    outputs = {"loss": loss}
    outputs.update({p_in[k]: t for k, t in new_p.items()})
    outputs.update({s_in[k]: t for k, t in new_s.items()})
    outputs.update(buf_out)
    # the trained parameters and fed-back buffers: constants -> graph inputs
    mapping = {n: g.input_node(p_in[k], n.shape, n.dtype) for k, n in params.items()}
    mapping.update({n: g.input_node(buf_in[k], n.shape, n.dtype) for k, n in buffers.items() if k in buf_in})
    keys = list(outputs)
    rebuilt = _replace_leaves([outputs[k].node for k in keys], mapping)
    outputs = {k: Tensor(n) for k, n in zip(keys, rebuilt)}
    return TrainStep(outputs, names, p_in, s_in, list(b_t), optimizer, lr_name, step_name,
                     buffer_inputs=buf_in, counters=counters, batch_specs=specs)


# ------------------------------------------------------------------------------------------------
# the compiled step

def _torch_cuda():
    try:
        import torch
        return torch if torch.cuda.is_available() else None
    except ImportError:  # pragma: no cover
        return None


class CompiledTrainStep:
    """A compiled training step that owns the parameters, optimizer state and buffers between calls.

    ``step(batch, lr=...)`` (or ``step(x=..., y=..., lr=...)``) runs forward, backward and the update
    as one program and returns the loss (a float). ``parameters()``, ``optimizer_state()`` and
    ``buffers()`` read the current values back as numpy arrays; ``write_back()`` loads them into the
    module. ``steps`` counts the updates taken; ``program`` is the compiled `Program` (``report()``,
    ``profile()``, ``save()``).

    On CUDA the fed-back values stay on the GPU as torch tensors (when torch with CUDA is installed),
    so a step copies only the batch in and the loss out.
    """

    def __init__(self, train_step: TrainStep, program, params: Mapping[str, np.ndarray],
                 buffers: Mapping[str, np.ndarray] | None = None, model=None, lr: float | None = None,
                 counters: Mapping[str, int] | None = None):
        self.train_step, self.program, self.model = train_step, program, model
        self.optimizer = train_step.optimizer
        self.lr = lr if lr is not None else getattr(self.optimizer, "lr", None)
        self.steps = 0
        self._counters = {k: np.asarray(v) for k, v in (counters or {}).items()}
        self._read = set(program.inputs)
        feed = train_step.initial_feed(params, buffers)
        target = getattr(program, "target", None)
        self._on_device = bool(target is not None and target.device_memory) and _torch_cuda() is not None
        self.feed = {k: self._to_device(v) for k, v in feed.items()}
        if self._on_device:
            # a step's outputs are the next step's inputs and nothing keeps them longer: two sets,
            # reused in turn, give every other call the same pointers, so its CUDA graph replays
            # (backends/cuda.py `_ring_outs`). The state handed back is copied (parameters() etc.).
            program.output_ring = 2

    def _to_device(self, a):
        if not self._on_device:
            return np.ascontiguousarray(a)
        torch = _torch_cuda()
        a = np.ascontiguousarray(a)
        if str(a.dtype) == "bfloat16":
            return torch.from_numpy(a.view(np.int16)).cuda().view(torch.bfloat16)
        return torch.from_numpy(a).cuda()

    def _batch(self, batch, kw: dict) -> dict:
        if batch is not None and kw:
            raise TypeError("pass the batch as one dict or as keyword arguments, not both")
        batch = dict(batch if batch is not None else kw)
        want = self.train_step.batch_inputs
        missing = [n for n in want if n not in batch]
        extra = [n for n in batch if n not in want]
        if missing or extra:
            raise KeyError(f"the batch must have exactly the inputs {want}: "
                           + (f"missing {missing}" if missing else "") + (" " if missing and extra else "")
                           + (f"unexpected {extra}" if extra else ""))
        return batch

    def __call__(self, batch: Mapping | None = None, *, lr: float | None = None, **kw) -> float:
        batch = self._batch(batch, kw)
        lr = self.lr if lr is None else lr
        if lr is None:
            raise ValueError("no learning rate: pass step(batch, lr=...) or give the optimizer an lr")
        k = self.steps + 1
        ts = self.train_step
        inputs = {**self.feed, **batch, ts.lr_name: np.array(lr, np.float32), ts.step_name: np.array(k, np.float32)}
        outs = self.program(**{n: v for n, v in inputs.items() if n in self._read})
        loss = outs.pop("loss")
        self.feed.update(outs)
        for n, d in ts.counters.items():
            self._counters[n] = self._counters[n] + d
        self.steps = k
        return float(loss)

    def run_reference(self, batch: Mapping | None = None, *, lr: float | None = None, **kw) -> float:
        """The same step on the numpy reference (slow; for checking): updates the state like a call."""
        batch = self._batch(batch, kw)
        lr = self.lr if lr is None else lr
        feed = {n: to_numpy(v) for n, v in self.feed.items()}
        loss, outs = self.train_step.run_reference(feed, batch, lr, self.steps + 1)
        self.feed.update({n: self._to_device(v) for n, v in outs.items()})
        for n, d in self.train_step.counters.items():
            self._counters[n] = self._counters[n] + d
        self.steps += 1
        return float(loss)

    # ---------------------------------------------------------------- reading the state back
    def parameters(self) -> dict:
        """Parameter name -> current values (numpy)."""
        return {n: to_numpy(self.feed[i]) for n, i in self.train_step.param_inputs.items()}

    def optimizer_state(self) -> dict:
        """Optimizer state key ("fc1.weight.exp_avg") -> current values (numpy)."""
        return {k: to_numpy(self.feed[i]) for k, i in self.train_step.state_inputs.items()}

    def buffers(self) -> dict:
        """Buffers the step updates (BatchNorm running statistics and counters) -> current values."""
        out = {n: to_numpy(self.feed[i]) for n, i in self.train_step.buffer_inputs.items()}
        out.update(self._counters)
        return out

    def write_back(self, model=None):
        """Load the current parameters (and updated buffers) into ``model`` (default: the module the
        step was built from)."""
        model = model if model is not None else self.model
        if model is None:
            raise ValueError("no module to write back into: pass one")
        model.load_state_dict({**self.parameters(), **self.buffers()}, strict=False)
        return model


def compile_step(train_step: TrainStep, params: Mapping[str, np.ndarray], device=None,
                 search: str = "none", buffers: Mapping | None = None, lr: float | None = None, *,
                 compile_fn: Callable, **options) -> CompiledTrainStep:
    """Compile a `TrainStep` graph (from make_train_step) with `compile_fn` (em.compile) and wrap it."""
    program = compile_fn(train_step.outputs, device=device, search=search, **options)
    return CompiledTrainStep(train_step, program, params, buffers, lr=lr)


def compile_train(model, loss_fn: Callable, optimizer: Optimizer, example_batch: Mapping, *,
                  device=None, search: str = "none", lr: float | None = None, compile_fn: Callable,
                  **options) -> CompiledTrainStep:
    """Compile one training step of ``model`` — forward, backward and the optimizer update as one graph,
    fused and (with ``search=``) searched together — and return a `CompiledTrainStep`.

    ``loss_fn(model, batch)`` returns the 0-d loss, with ``batch`` a dict of graph inputs named and
    shaped like ``example_batch`` (a dict of arrays, or of (shape, dtype) pairs; dims may be named).
    ``lr`` (default: the optimizer's) can be changed on every call without recompiling. The module's
    current parameters are the starting point; it is not modified until ``write_back()``.
    ``data_parallel=True`` under ember.distributed.init(): each rank feeds its slice of the global
    batch, and the loss and gradients are averaged over the ranks before the update (one all-reduce,
    docs/distributed.md); the ranks must start from the same parameters.
    """
    ts = make_module_train_step(model, loss_fn, optimizer, example_batch,
                                data_parallel=bool(options.pop("data_parallel", False)))
    program = compile_fn(ts.outputs, device=device, search=search, **options)
    params = {k: p.data for k, p in model.named_parameters() if k in ts.param_inputs}
    buffers = {k: b.data for k, b in model.named_buffers() if k in ts.buffer_inputs}
    counters = {k: model.get_buffer(k).data for k in ts.counters}
    return CompiledTrainStep(ts, program, params, buffers, model=model, lr=lr, counters=counters)
