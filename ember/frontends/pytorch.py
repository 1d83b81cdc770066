"""The PyTorch frontend: `em.from_torch(module, example_inputs)` and `torch.compile(backend="ember")`.

    fn = em.from_torch(model, (x,), device="cuda")   # torch.export -> core ATen -> Ember graph -> Program
    y = fn(x)                                         # torch tensors in, torch tensors out

1. `torch.export` traces the module to ATen (the training IR, which keeps high-level ops such as
   `linear` and `scaled_dot_product_attention`). Ops that `aten.CONVERTERS` maps are kept; every
   other op is decomposed with torch's core ATen decompositions.
2. `import_graph` walks the FX graph once: placeholders become Ember inputs (user inputs) or
   constants (parameters, buffers, lifted constants); each call_function node goes through its
   converter. Every result is checked against the shape torch recorded for the node and cast to
   torch's dtype (int64 narrowed to int32, see aten.py), so a converter bug is an error naming the
   node, never a silently different graph.
3. Buffers the model mutates (BatchNorm running statistics in training mode) are graph *inputs* fed
   from the module on every call, and their new values are graph outputs copied back into the
   module, as PyTorch updates them.
4. `em.compile` builds the program; `TorchFunction` converts at the boundary (int64 -> int32 in,
   dtypes restored out; CUDA tensors zero-copy on CUDA).

torch is imported only here (PyTorch is optional for the rest of Ember). This module imports the
compiler (`ember.pipeline`) only inside `TorchFunction`, the user-facing wrapper; the graph
import itself uses nothing below the Tensor API.
"""
from __future__ import annotations

import operator
import os
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..tensor import Tensor
from ..tensor import input as em_input
from ..tensor import tensor as em_tensor
from .aten import CONVERTERS, REFUSED, Unsupported, UnsupportedOpError, _dtype

__all__ = ["from_torch", "import_graph", "TorchFunction", "TorchImportError", "UnsupportedOpError",
           "ember_backend", "register_backend", "supported_ops", "refused_ops"]


class TorchImportError(ValueError):
    """The module could not be imported (export failed, a converter disagreed with torch's shapes,
    an input is not what the import was specialised for). The message says where."""


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError("the PyTorch frontend needs torch (pip install 'ember[torch]')") from None
    return torch


def supported_ops() -> list:
    """ATen op overloads (``packet.overload``) that have a converter."""
    return sorted(CONVERTERS)


def refused_ops() -> dict:
    """ATen op overloads Ember refuses on purpose, with the reason the error gives."""
    return dict(REFUSED)


def _op_key(target) -> str | None:
    """'add.Tensor' for torch.ops.aten.add.Tensor; None for non-ATen callables."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.name.startswith("aten::"):
        return None
    return f"{schema.name[len('aten::'):]}.{schema.overload_name or 'default'}"


def _op_name(target) -> str:
    k = _op_key(target)
    if k is not None:
        return f"aten.{k}"
    return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or str(target)


def where_in_model(node) -> str:
    """'node add_3 in module layer1.0.conv1 (Conv2d), model.py:42: y = self.conv1(x)'."""
    parts = [f"node {node.name!r}"]
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path, cls = list(stack.values())[-1]
        if path:
            parts.append(f"in module {path.replace('L__self__.', '').replace('L__self___', '')!s} "
                         f"({str(cls).rsplit('.', 1)[-1]})")
    trace = node.meta.get("stack_trace")
    if trace:
        lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip()]
        files = [i for i, ln in enumerate(lines) if ln.startswith("File ")]
        if files:  # the innermost frame in the user's code (not inside torch) says most
            torch_dir = os.path.dirname(_torch().__file__)
            own = [i for i in files if torch_dir not in lines[i]]
            i = (own or files)[-1]
            loc = lines[i]
            try:
                fname = loc.split('"')[1]
                lineno = loc.split("line ")[1].split(",")[0]
                loc = f"{os.path.basename(fname)}:{lineno}"
            except IndexError:
                pass
            code = lines[i + 1] if i + 1 < len(lines) else ""
            parts.append(f"at {loc}" + (f": {code}" if code else ""))
    return ", ".join(parts)


def _decomposition_table():
    """torch's core ATen decompositions, minus every op Ember converts directly (kept whole so
    e.g. attention stays one op Ember's search can recognise)."""
    torch = _torch()
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if _op_key(op) in CONVERTERS or _op_key(op) in REFUSED:
            del table[op]
    return table


def export(module, args: tuple, kwargs: dict | None = None):
    """torch.export + decompositions; failures become TorchImportError naming the module."""
    torch = _torch()
    try:
        ep = torch.export.export(module, tuple(args), kwargs or {}, strict=False)
    except Exception as e:  # noqa: BLE001 - torch raises many types; re-raise with context
        raise TorchImportError(f"torch.export could not trace {type(module).__name__}: "
                               f"{type(e).__name__}: {_first_lines(str(e))}") from e
    try:
        return ep.run_decompositions(_decomposition_table())
    except Exception as e:  # noqa: BLE001
        raise TorchImportError(f"decomposing {type(module).__name__} to core ATen failed: "
                               f"{type(e).__name__}: {_first_lines(str(e))}") from e


def _first_lines(s: str, n: int = 6) -> str:
    lines = s.strip().splitlines()
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


# ------------------------------------------------------------------------------------------------
# graph import

class ImportedGraph:
    """The Ember graph of one exported program and what the wrapper needs to call it.

    inputs:   [(ember_name, kind, ref)] in call order: kind "user" (ref = position in the
              flattened user inputs), "buffer" (ref = buffer FQN, fed from the module) or
              "scalar" (a non-tensor user input baked in; ref = (position, value)).
    outputs:  flattened user outputs: Ember Tensors, Python values, or Unsupported.
    out_meta: torch's (dtype, shape) of each flattened output (None for non-tensors).
    mutations:[(kind, target, Tensor, torch dtype)]: new values of buffers ("buffer", FQN) or user
              inputs ("user", position) to copy back after each call.
    """

    def __init__(self):
        self.inputs: list = []
        self.input_meta: dict = {}
        self.outputs: list = []
        self.out_meta: list = []
        self.mutations: list = []
        self.out_spec = None
        self.in_spec = None


def _val_meta(val):
    torch = _torch()
    if isinstance(val, torch.Tensor):
        return val.dtype, tuple(int(s) for s in val.shape)
    return None


def _check_result(node, value, val):
    """Compare a converter's result with torch's recorded value (shape), cast to torch's dtype."""
    torch = _torch()
    if isinstance(value, Unsupported) or value is None:
        return value
    if isinstance(val, torch.Tensor):
        if not isinstance(value, Tensor):
            raise TorchImportError(f"converting {_op_name(node.target)} at {where_in_model(node)}: expected a "
                                   f"tensor, the converter returned {type(value).__name__}")
        shape = tuple(int(s) for s in val.shape)
        if tuple(value.shape) != shape:
            raise TorchImportError(f"converting {_op_name(node.target)} at {where_in_model(node)}: Ember's result "
                                   f"has shape {tuple(value.shape)}, torch's has {shape} (a converter bug)")
        want = _dtype(val.dtype)
        return value if value.dtype == want else value.cast(want)
    if isinstance(val, (list, tuple)) and isinstance(value, (list, tuple)):
        if len(val) != len(value):
            raise TorchImportError(f"converting {_op_name(node.target)} at {where_in_model(node)}: {len(value)} "
                                   f"results, torch has {len(val)}")
        return type(value)(_check_result(node, v, m) for v, m in zip(value, val))
    return value


def _map_args(a, env):
    import torch.fx as fx
    if isinstance(a, fx.Node):
        return env[a.name]
    if isinstance(a, (list, tuple)):
        return type(a)(_map_args(x, env) for x in a)
    if isinstance(a, dict):
        return {k: _map_args(v, env) for k, v in a.items()}
    return a


def _first_unsupported(a):
    if isinstance(a, Unsupported):
        return a
    if isinstance(a, (list, tuple)):
        for x in a:
            u = _first_unsupported(x)
            if u is not None:
                return u
    if isinstance(a, dict):
        return _first_unsupported(list(a.values()))
    return None


_PY_OPS = {operator.getitem, operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv,
           operator.neg, operator.mod, operator.pow}


def _constant(value, name: str) -> Any:
    torch = _torch()
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.dtype == torch.int64 or t.dtype in (torch.int16, torch.int8, torch.uint8):
            t = t.to(torch.int32)
        if t.dtype == torch.bool:
            return em_tensor(t.cpu().numpy(), dt.bool_, name=name)
        return em_tensor(t, name=name)
    return value


PRECISIONS = ("float32", "tf32", "torch")


def tf32_kinds(precision: str) -> tuple:
    """The contraction kinds that may use TF32 under a from_torch `precision`:
    "float32" none (float32 accuracy everywhere, the default); "tf32" matmuls and convs; "torch" what
    PyTorch does now: convs if torch.backends.cudnn.allow_tf32 (True unless changed), matmuls if
    torch.backends.cuda.matmul.allow_tf32 (False unless changed, e.g. by
    torch.set_float32_matmul_precision("high"))."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "float32":
        return ()
    if precision == "tf32":
        return ("matmul", "conv")
    torch = _torch()
    return tuple(k for k, on in (("matmul", torch.backends.cuda.matmul.allow_tf32),
                                 ("conv", torch.backends.cudnn.allow_tf32)) if on)


def import_graph(ep, mutable_buffers_as_inputs: bool = True, precision: str = "float32") -> ImportedGraph:
    """Build the Ember graph of an exported (and decomposed) program; `precision` as in from_torch."""
    kinds = tf32_kinds(precision)
    if not kinds:
        return _import_graph(ep, mutable_buffers_as_inputs)
    from ..precision import allow_tf32
    with allow_tf32(*kinds):
        return _import_graph(ep, mutable_buffers_as_inputs)


def _import_graph(ep, mutable_buffers_as_inputs: bool) -> ImportedGraph:
    torch = _torch()
    from torch.export.graph_signature import InputKind, OutputKind
    sig = ep.graph_signature
    out = ImportedGraph()
    out.in_spec, out.out_spec = ep.call_spec.in_spec, ep.call_spec.out_spec
    mutated_buffers = {s.target for s in sig.output_specs if s.kind == OutputKind.BUFFER_MUTATION}
    in_specs = {s.arg.name: s for s in sig.input_specs}
    env: dict = {}
    user_pos = 0
    user_positions: dict = {}  # placeholder name -> position in the flattened user inputs
    used_names: set = set()

    def ember_name(n: str) -> str:
        base = n if n.isidentifier() and not n.startswith("_") else "in_" + "".join(c if c.isalnum() else "_" for c in n)
        name, k = base, 1
        while name in used_names:
            name, k = f"{base}_{k}", k + 1
        used_names.add(name)
        return name

    for node in ep.graph.nodes:
        if node.op == "placeholder":
            spec = in_specs[node.name]
            val = node.meta.get("val")
            if spec.kind == InputKind.USER_INPUT:
                user_positions[node.name] = user_pos
                if isinstance(val, torch.Tensor):
                    name = ember_name(node.name)
                    env[node.name] = em_input(name, tuple(int(s) for s in val.shape), _dtype(val.dtype))
                    out.inputs.append((name, "user", user_pos))
                    out.input_meta[name] = (val.dtype, tuple(int(s) for s in val.shape))
                else:
                    if isinstance(val, torch.SymInt) or type(val).__name__.startswith("Sym"):
                        raise TorchImportError(f"input {node.name!r} is a symbolic {type(val).__name__}: "
                                               "dynamic shapes are not supported (static shapes only)")
                    env[node.name] = val
                    out.inputs.append((node.name, "scalar", (user_pos, val)))
                user_pos += 1
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                if spec.kind == InputKind.BUFFER and spec.target in mutated_buffers and mutable_buffers_as_inputs:
                    name = ember_name(node.name)
                    env[node.name] = em_input(name, tuple(int(s) for s in val.shape), _dtype(val.dtype))
                    out.inputs.append((name, "buffer", spec.target))
                    out.input_meta[name] = (val.dtype, tuple(int(s) for s in val.shape))
                    continue
                if spec.kind == InputKind.CONSTANT_TENSOR:
                    value = ep.constants[spec.target]
                elif spec.target in ep.state_dict:
                    value = ep.state_dict[spec.target]
                else:
                    value = ep.constants[spec.target]  # non-persistent buffers
                env[node.name] = _constant(value, spec.target)
            else:
                raise TorchImportError(f"input {node.name!r} of kind {spec.kind.name} is not supported")
        elif node.op == "call_function":
            args = _map_args(node.args, env)
            kwargs = _map_args(node.kwargs, env)
            u = _first_unsupported((args, kwargs))
            if u is not None and node.target is not operator.getitem:
                raise UnsupportedOpError(f"{_op_name(node.target)} at {where_in_model(node)} uses {u.why}, "
                                         "which Ember does not compute")
            if node.target in _PY_OPS:
                res = node.target(*args, **kwargs)
            else:
                key = _op_key(node.target)
                conv = CONVERTERS.get(key) if key is not None else None
                if key in REFUSED:
                    raise UnsupportedOpError(f"{_op_name(node.target)} at {where_in_model(node)}: {REFUSED[key]}")
                if conv is None:
                    raise UnsupportedOpError(f"unsupported op {_op_name(node.target)} at {where_in_model(node)}")
                try:
                    res = conv(*args, **kwargs)
                except UnsupportedOpError as e:
                    raise UnsupportedOpError(f"{_op_name(node.target)} at {where_in_model(node)}: {e}") from None
                except Exception as e:  # noqa: BLE001 - say which node, keep the cause chained
                    raise TorchImportError(f"converting {_op_name(node.target)} at {where_in_model(node)} "
                                           f"failed: {type(e).__name__}: {e}") from e
            env[node.name] = _check_result(node, res, node.meta.get("val"))
        elif node.op == "output":
            results = _map_args(node.args[0], env)
            vals = [a.meta.get("val") if hasattr(a, "meta") else a for a in node.args[0]]
            for spec, value, val in zip(sig.output_specs, results, vals):
                if spec.kind == OutputKind.USER_OUTPUT:
                    if isinstance(value, Unsupported):
                        raise UnsupportedOpError(f"the model returns {value.why}, which Ember does not compute")
                    out.outputs.append(value)
                    out.out_meta.append(_val_meta(val))
                elif spec.kind == OutputKind.BUFFER_MUTATION:
                    out.mutations.append(("buffer", spec.target, value, val.dtype))
                elif spec.kind == OutputKind.USER_INPUT_MUTATION:
                    out.mutations.append(("user", user_positions[spec.target], value, val.dtype))
                else:
                    raise TorchImportError(f"output {spec.arg} of kind {spec.kind.name} is not supported")
        elif node.op == "get_attr":
            env[node.name] = _constant(getattr(ep.graph_module, node.target), node.target)
        else:
            raise TorchImportError(f"FX node {node.name!r} with op {node.op!r} is not supported")
    return out


# ------------------------------------------------------------------------------------------------
# the callable

def _to_torch(x, device):
    torch = _torch()
    if isinstance(x, torch.Tensor):
        return x
    a = np.asarray(x)
    if not a.flags.c_contiguous:
        a = a.copy()  # (np.ascontiguousarray would turn a 0-d array into 1-d)
    if a.dtype.name == "bfloat16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(a)
    return t if device is None or str(device) == "cpu" else t.to(device)


_GRAD_WARNED = [False]


def _warn_if_grad(args) -> None:
    """Ember computes forward passes only: outputs never carry autograd history. Say so once
    when a caller looks like it expects gradients."""
    torch = _torch()
    if _GRAD_WARNED[0] or not torch.is_grad_enabled():
        return
    if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        import warnings
        warnings.warn("Ember's PyTorch frontend is forward-only: its outputs do not require grad "
                      "(run under torch.no_grad() to silence this)", stacklevel=3)
        _GRAD_WARNED[0] = True


INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1


class TorchFunction:
    """A PyTorch module compiled by Ember. Call it like the module (same positional/keyword
    arguments as the example inputs); it returns torch tensors in the module's output structure.

    Shapes, dtypes and non-tensor arguments are fixed at import; calling with others is an error
    (re-import for new shapes). Parameters are captured as constants at import time: re-import
    after changing weights. Buffers the model updates (BatchNorm running stats in training mode)
    are read from the module on each call and written back, as in PyTorch.
    """

    def __init__(self, module, graph: ImportedGraph, device, search: str = "none", **compile_options):
        from ..backends.target import get_target
        self.module = module
        self.graph = graph
        self.device = get_target(device)  # a Target (backends/target.py)
        self.search = search
        tensors, index = [], []
        seen: dict = {}
        for o in list(graph.outputs) + [m[2] for m in graph.mutations]:
            if isinstance(o, Tensor):
                k = id(o.node)
                if k not in seen:
                    seen[k] = len(tensors)
                    tensors.append(o)
                index.append(seen[k])
            else:
                index.append(None)
        self._tensors, self._index = tensors, index
        from torch.utils._pytree import tree_flatten, tree_unflatten
        n_in = graph.in_spec.num_leaves if graph.in_spec is not None else 0
        self._n_positional = n_in
        self._positional_only = graph.in_spec is not None and tree_flatten((tuple(range(n_in)), {}))[1] == graph.in_spec
        n_out = len(graph.outputs)
        probe = tree_unflatten(list(range(n_out)), graph.out_spec) if graph.out_spec is not None else None
        self._out_form = "leaf" if probe == 0 and n_out == 1 else "tuple" if probe == tuple(range(n_out)) else "tree"
        self.program = None
        if tensors:
            from ..pipeline import compile as em_compile
            self.program = em_compile(tuple(tensors), device=device, search=search, **compile_options)

    # ------------------------------------------------------------------ calling
    def _flatten(self, args, kwargs) -> list:
        if not kwargs and len(args) == self._n_positional and self._positional_only:
            return args  # the common case, without pytree's ~20 us
        from torch.utils._pytree import tree_flatten
        flat, spec = tree_flatten((tuple(args), dict(kwargs)))
        if spec != self.graph.in_spec:
            raise TorchImportError(f"called with arguments structured as {spec}, the import was for "
                                   f"{self.graph.in_spec}")
        return flat

    def _feed(self, args, kwargs) -> tuple[dict, list]:
        torch = _torch()
        flat = self._flatten(args, kwargs)
        feed = {}
        for name, kind, ref in self.graph.inputs:
            if kind == "scalar":
                pos, val = ref
                if flat[pos] != val:
                    raise TorchImportError(f"non-tensor input #{pos} was {val!r} when the model was imported and is "
                                           f"{flat[pos]!r} now: non-tensor inputs are baked in; re-import")
                continue
            t = flat[ref] if kind == "user" else self.module.get_buffer(ref)
            if not isinstance(t, torch.Tensor):
                raise TorchImportError(f"input {name!r} must be a torch tensor, got {type(t).__name__}")
            want_dtype, want_shape = self.graph.input_meta[name]
            if t.shape != want_shape:
                raise TorchImportError(f"input {name!r} has shape {tuple(t.shape)}, the model was imported for "
                                       f"{want_shape} (shapes are static: re-import for new shapes)")
            if t.dtype != want_dtype:
                raise TorchImportError(f"input {name!r} has dtype {t.dtype}, the model was imported for {want_dtype}")
            if t.dtype in (torch.int64, torch.int16, torch.int8, torch.uint8):
                if not t.is_cuda and t.numel() and (int(t.max()) > INT32_MAX or int(t.min()) < INT32_MIN):
                    raise TorchImportError(f"input {name!r}: int64 values outside int32 range "
                                           "(Ember narrows integer inputs to int32)")
                t = t.to(torch.int32)
            if self.device.device_memory:
                if not t.is_cuda:
                    t = t.cuda()
                t = t.contiguous()
            else:
                if t.is_cuda:
                    raise TorchImportError(f"input {name!r} is a CUDA tensor but the model was compiled for the CPU")
            feed[name] = t
        return feed, flat

    def _fast_plan(self):
        """What a call needs when the slow path's generality is not needed: a static-shape CUDA
        program whose inputs are all positional tensors (no integer narrowing, no buffers, no
        scalars), no buffer mutations, outputs in the program's dtypes, returned as one tensor or
        a tuple. Then a call checks each tensor (shape, dtype, CUDA, contiguous) and goes straight
        to the executor's launch: a few microseconds less per call (bench/launch_latency.py).
        None where any of that does not hold."""
        torch = _torch()
        prog = self.program
        if (prog is None or not self.device.device_memory or prog.dims or not self._positional_only
                or self.graph.mutations or self._out_form == "tree"
                or not hasattr(prog.executor, "run_torch_static")):
            return None
        checks, where = [], {}
        for name, kind, ref in self.graph.inputs:
            dtype, shape = self.graph.input_meta.get(name, (None, None))
            if kind != "user" or dtype in (torch.int64, torch.int16, torch.int8, torch.uint8):
                return None
            checks.append((ref, torch.Size(shape), dtype))
            where[name] = ref
        if any(n not in where for n in prog.inputs):
            return None
        n_out = len(self.graph.outputs)
        for i, idx in enumerate(self._index[:n_out]):
            if idx is None or getattr(torch, prog.buffers[prog.outputs[idx]].dtype.name) != self.graph.out_meta[i][0]:
                return None
        return (tuple(checks), tuple(where[n] for n in prog.inputs), tuple(self._index[:n_out]))

    def _call_fast(self, plan, args):
        """The fast call (see _fast_plan), or None when these arguments need the general path."""
        torch = _torch()
        checks, order, index = plan
        if len(args) != self._n_positional:
            return None
        grad = torch.is_grad_enabled()
        for pos, shape, dtype in checks:
            t = args[pos]
            if not (isinstance(t, torch.Tensor) and t.shape == shape and t.dtype == dtype and t.is_cuda
                    and t.is_contiguous()) or (grad and t.requires_grad):
                return None
        outs = self.program.executor.run_torch_static(self.program, tuple(args[p] for p in order))
        self.program._last_env = {}
        if self._out_form == "leaf":
            return outs[index[0]]
        return tuple(outs[i] for i in index)

    def __call__(self, *args, **kwargs):
        torch = _torch()
        if not kwargs:
            plan = self.__dict__.get("_fast")
            if plan is None and "_fast" not in self.__dict__:
                plan = self._fast = self._fast_plan()
            if plan is not None:
                res = self._call_fast(plan, args)
                if res is not None:
                    return res
        feed, flat = self._feed(args, kwargs)
        _warn_if_grad(flat)
        results = self.program.call_checked(feed) if self.program is not None else ()  # a tuple: compiled from one
        out_device = None
        values = []
        n_out = len(self.graph.outputs)
        for i, idx in enumerate(self._index):
            if idx is None:
                src = self.graph.outputs[i] if i < n_out else None
                values.append(src)
                continue
            want = self.graph.out_meta[i][0] if i < n_out else self.graph.mutations[i - n_out][3]
            t = results[idx]
            if not isinstance(t, torch.Tensor):
                if out_device is None:
                    out_device = next((f.device for f in feed.values()), None) or \
                        ("cuda" if self.device.device_memory else "cpu")
                t = _to_torch(t, out_device)
            if t.dtype != want:
                t = t.to(want)
            values.append(t)
        if self.graph.mutations:
            with torch.no_grad():
                for (kind, target, _, _), v in zip(self.graph.mutations, values[n_out:]):
                    dst = self.module.get_buffer(target) if kind == "buffer" else flat[target]
                    dst.copy_(v)
        if self._out_form == "leaf":
            return values[0]
        if self._out_form == "tuple":
            return tuple(values[:n_out])
        from torch.utils._pytree import tree_unflatten
        return tree_unflatten(values[:n_out], self.graph.out_spec)

    # ------------------------------------------------------------------ inspection
    def reference(self, *args, **kwargs):
        """The same graph evaluated by Ember's numpy reference (float64 inside), as CPU torch
        tensors in the model's output structure. Does not update buffers."""
        torch = _torch()
        from torch.utils._pytree import tree_unflatten
        from .. import graph as g
        from ..reference import reference
        feed, _ = self._feed(args, kwargs)
        feed = {k: (v.float() if v.dtype == torch.bfloat16 else v).cpu().numpy() for k, v in feed.items()}
        tensors = [o for o in self.graph.outputs if isinstance(o, Tensor)]
        names = {n.arg for n in g.inputs_of([t.node for t in tensors])}
        results = iter(reference(tuple(tensors), **{k: v for k, v in feed.items() if k in names}) if tensors else ())
        vals = []
        for o, meta in zip(self.graph.outputs, self.graph.out_meta):
            vals.append(_to_torch(np.asarray(next(results)), "cpu").to(meta[0]) if isinstance(o, Tensor) else o)
        return tree_unflatten(vals, self.graph.out_spec)

    def report(self) -> str:
        return self.program.report() if self.program is not None else "(no tensor outputs)"

    @property
    def outputs(self) -> list:
        """The Ember tensors of the model's (flattened) outputs."""
        return list(self.graph.outputs)


def _as_module(fn):
    torch = _torch()
    if isinstance(fn, torch.nn.Module):
        return fn

    class Wrapped(torch.nn.Module):
        def forward(self, *args, **kwargs):
            return fn(*args, **kwargs)
    Wrapped.__name__ = getattr(fn, "__name__", "function")
    return Wrapped()


def from_torch(module, example_inputs, device: str | None = None, search: str = "none", *,
               example_kwargs: dict | None = None, precision: str = "float32", **compile_options) -> TorchFunction:
    """Import a torch.nn.Module (or a function of tensors) through torch.export and compile it.

    example_inputs: a tuple of positional arguments (a single tensor is accepted too); shapes,
    dtypes and non-tensor values are fixed by them. The module's train/eval mode is honoured:
    BatchNorm in training mode uses batch statistics and updates its running statistics.
    device: "cpu" or "cuda" (default: CUDA if present). search: as em.compile.
    precision: float32 contractions keep float32 accuracy ("float32", the default), may use TF32
    ("tf32"), or follow PyTorch's current TF32 flags ("torch": convs in TF32 as cuDNN runs them by
    default, matmuls not unless torch.backends.cuda.matmul.allow_tf32): see `tf32_kinds`.
    """
    torch = _torch()
    if isinstance(example_inputs, torch.Tensor) or not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    module = _as_module(module)
    from ..backends.target import get_target
    dev = get_target(device)  # an unknown or absent device fails here, before the export
    with torch.no_grad():
        ep = export(module, tuple(example_inputs), example_kwargs)
    graph = import_graph(ep, precision=precision)
    return TorchFunction(module, graph, dev, search, **compile_options)


# ------------------------------------------------------------------------------------------------
# torch.compile(backend="ember")

class _DynamoCompiled:
    """What the `ember` backend returns for one Dynamo graph: compiled lazily per input signature
    (shapes, dtypes, scalar values), so graphs Dynamo marks dynamic still run with static shapes."""

    def __init__(self, gm, device: str | None, search: str, options: dict):
        self.gm, self.device, self.search, self.options = gm, device, search, options
        self._cache: dict = {}

    def _key(self, args):
        torch = _torch()
        return tuple((tuple(a.shape), a.dtype, a.device.type) if isinstance(a, torch.Tensor) else ("v", a)
                     for a in args)

    def __call__(self, *args):
        torch = _torch()
        _warn_if_grad(args)
        key = self._key(args)
        fn = self._cache.get(key)
        if fn is None:
            dev = self.device
            if dev is None:
                dev = "cuda" if any(isinstance(a, torch.Tensor) and a.is_cuda for a in args) else "cpu"
            concrete = tuple(int(a) if isinstance(a, torch.SymInt) else a for a in args)
            with torch.no_grad():
                ep = export(self.gm, concrete)
            opts = dict(self.options)
            graph = import_graph(ep, precision=opts.pop("precision", "float32"))
            fn = TorchFunction(_GraphModuleHolder(self.gm), graph, dev, self.search, **opts)
            self._cache[key] = fn
        out = fn(*args)
        return out


class _GraphModuleHolder:
    """get_buffer for a Dynamo GraphModule (its buffers are normally lifted to inputs)."""

    def __init__(self, gm):
        self.gm = gm

    def get_buffer(self, name):
        return self.gm.get_buffer(name)


def ember_backend(gm, example_inputs, **kwargs):
    """The torch.compile backend: ``torch.compile(model, backend="ember", options={"device": "cpu",
    "search": "none", "precision": "float32"})``. Dynamo hands over an FX graph of torch calls; it is exported to ATen and
    imported like `from_torch` (parameters arrive as graph inputs, so they are not baked in)."""
    opts = dict(kwargs.get("options") or {})
    device = opts.pop("device", None)
    search = opts.pop("search", "none")
    return _DynamoCompiled(gm, device, search, opts)


_REGISTERED = False


def register_backend() -> None:
    """Make ``torch.compile(..., backend="ember")`` available (idempotent)."""
    global _REGISTERED
    if _REGISTERED:
        return
    _torch()
    from torch._dynamo.backends import registry
    if "ember" not in registry._BACKENDS and "ember" not in getattr(registry, "_COMPILER_FNS", {}):
        registry.register_backend(name="ember")(ember_backend)
    _REGISTERED = True
