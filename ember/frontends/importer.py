"""The torch.export importer: a PyTorch module -> an exported ATen program -> an Ember graph.

1. `export` traces the module with `torch.export` to ATen (the training IR, which keeps high-level ops
   such as `linear` and `scaled_dot_product_attention`). Ops that `aten.CONVERTERS` maps are kept; every
   other op is decomposed with torch's core ATen decompositions.
2. `import_graph` walks the FX graph once: placeholders become Ember inputs (user inputs) or
   constants (parameters, buffers, lifted constants); each call_function node goes through its
   converter. Every result is checked against the shape torch recorded for the node and cast to
   torch's dtype (int64 narrowed to int32, see aten/__init__.py), so a converter bug is an error naming the
   node, never a silently different graph.
3. Buffers the model mutates (BatchNorm running statistics in training mode) are graph *inputs* fed
   from the module on every call, and their new values are graph outputs copied back into the
   module, as PyTorch updates them.

The import uses nothing below the Tensor API (no compiler); `function.TorchFunction` compiles.
"""
from __future__ import annotations

import operator
import os
from typing import Any

from .. import dtypes as dt
from ..tensor import Tensor
from ..tensor import input as em_input
from ..tensor import tensor as em_tensor
from .aten import CONVERTERS, RANDOM_OPS, RECORDED_SHAPE_QUIRKS, REFUSED, Unsupported, UnsupportedOpError, _dtype
from .aten.random import combine as combine_random


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
    """ATen op overloads (``packet.overload``) that have a converter or are drawn at call time."""
    return sorted(set(CONVERTERS) | set(RANDOM_OPS))


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
        if files:  # the innermost frame in the user's code (not inside torch or ember) says most
            torch_dir = os.path.dirname(_torch().__file__)
            ember_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # (from_torch's wrapper)
            own = [i for i in files if torch_dir not in lines[i] and ember_dir not in lines[i]]
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
        if _op_key(op) in CONVERTERS or _op_key(op) in REFUSED or _op_key(op) in RANDOM_OPS:
            del table[op]
    return table


def export(module, args: tuple, kwargs: dict | None = None):
    """torch.export + decompositions; failures become TorchImportError naming the module.

    A module keeping state in a plain tensor attribute it reassigns in forward (KernelBench's
    VanillaRNN: `self.hidden = tanh(...)`) is exported by torch with that attribute as a constant,
    the reassignment lost (or refused, where forward also mutates it in place). Such attributes
    are registered as buffers and the module exported again: a buffer's new value is a mutation
    the wrapper writes back after each call, as eager Python's assignment does. Attributes that
    forward only reads go back to being plain attributes (constants)."""
    try:
        ep = _export(module, args, kwargs)
    except TorchImportError as e:
        if "is mutated in the forward method" not in str(e) or not _tensor_attributes_as_buffers(module):
            raise
        return _export(module, args, kwargs)
    consts = [sp.target for sp in ep.graph_signature.input_specs
              if sp.kind.name == "CONSTANT_TENSOR" and isinstance(sp.target, str)]
    promoted = _tensor_attributes_as_buffers(module, set(consts)) if consts else []
    if not promoted:
        return ep
    try:
        ep2 = _export(module, args, kwargs)
    except TorchImportError:
        ep2 = None
    if ep2 is not None and set(ep2.graph_signature.buffers_to_mutate.values()) & set(promoted):
        return ep2
    _buffers_as_attributes(module, promoted)
    return ep


def _export(module, args: tuple, kwargs: dict | None):
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


def _tensor_attributes_as_buffers(module, only: set | None = None) -> list:
    """Plain tensor attributes of module and its submodules (neither parameters nor buffers;
    `only`: these dotted names) registered as non-persistent buffers, same tensors; returns their
    names."""
    torch = _torch()
    done = []
    for prefix, sub in module.named_modules():
        for name, value in list(vars(sub).items()):
            full = f"{prefix}.{name}" if prefix else name
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter) \
                    and not name.startswith("_") and (only is None or full in only):
                delattr(sub, name)
                sub.register_buffer(name, value, persistent=False)
                done.append(full)
    return done


def _buffers_as_attributes(module, names: list) -> None:
    """Undo _tensor_attributes_as_buffers for `names`."""
    for full in names:
        prefix, _, name = full.rpartition(".")
        sub = module.get_submodule(prefix) if prefix else module
        value = sub._buffers.pop(name)
        sub._non_persistent_buffers_set.discard(name)
        object.__setattr__(sub, name, value)


def _first_lines(s: str, n: int = 6) -> str:
    lines = s.strip().splitlines()
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


# ------------------------------------------------------------------------------------------------
# graph import

class ImportedGraph:
    """The Ember graph of one exported program and what the wrapper needs to call it.

    inputs:   [(ember_name, kind, ref)] in call order: kind "user" (ref = position in the
              flattened user inputs), "buffer" (ref = buffer FQN, fed from the module),
              "scalar" (a non-tensor user input baked in; ref = (position, value)) or "random"
              (ref = an aten.random.RandomDraw, called in this order on every call).
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
        quirk = RECORDED_SHAPE_QUIRKS.get(_op_key(node.target) or _op_key(getattr(
            node.args[0], "target", None) if node.target is operator.getitem and node.args else None))
        if tuple(value.shape) != shape and not (quirk and quirk(tuple(value.shape), shape)):
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
            elif spec.kind == InputKind.CUSTOM_OBJ and isinstance(ep.constants.get(spec.target), torch.Generator):
                users = ", ".join(sorted(_op_name(u.target) for u in node.users))
                raise UnsupportedOpError(f"{users} with an explicit torch.Generator: Ember draws random numbers at call "
                                         "time only from torch's default generator (drop generator=)")
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
                if key in RANDOM_OPS and _import_random(node, key, args, out, env, ember_name):
                    continue
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


def _import_random(node, key, args, out: ImportedGraph, env: dict, ember_name) -> bool:
    """A random op becomes a graph input drawn at call time (aten/random.py); False when it draws
    nothing here (dropout in eval mode), so its converter applies."""
    try:
        made = RANDOM_OPS[key](node)
    except UnsupportedOpError as e:
        raise UnsupportedOpError(f"{_op_name(node.target)} at {where_in_model(node)}: {e}") from None
    if made is None:
        return False
    draw, form = made
    val = node.meta.get("val")
    noise_val = val[0] if form == "scale_and_mask" else val
    name = ember_name(node.name)
    shape = tuple(int(s) for s in noise_val.shape)
    noise = em_input(name, shape, _dtype(noise_val.dtype))
    out.inputs.append((name, "random", draw))
    out.input_meta[name] = (noise_val.dtype, shape)
    x = args[0] if form != "draw" else None
    env[node.name] = _check_result(node, combine_random(form, x, noise), val)
    return True
