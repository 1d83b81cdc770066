"""Module: the base class of every ember.nn layer, shaped like torch.nn.Module.

A module holds parameters and buffers (numpy arrays, see parameter.py) and submodules. Calling it
builds graph nodes; nothing runs. Reading ``self.weight`` inside ``forward`` gives a lazy Tensor, a
DATA node named after the parameter's dotted state_dict key (``"layers.0.self_attn.q_proj.weight"``),
so that two parameters with equal values stay two nodes and later stages (weight loading, autograd,
the report) can say which weight a node is.

Names are taken from the *outermost* module being called: ``model(x)`` names every parameter with
its key in ``model.state_dict()``; calling a submodule on its own names its parameters relative to
it. A parameter reachable under two names (tied weights) gets its first name, as in torch's
``named_parameters``, and so is one node.

The arrays themselves: ``state_dict()`` (key -> read-only numpy array), ``named_parameters()`` /
``get_parameter("a.b.weight")`` (Parameter objects, ``.data`` is the array). Assigning an array to a
parameter attribute (``m.weight = arr``) replaces its values.
"""
from __future__ import annotations

from collections import OrderedDict
from contextvars import ContextVar
from typing import Iterator, NamedTuple

import numpy as np

from .. import dtypes as dt
from ..tensor import Tensor
from .parameter import Buffer, Parameter, as_array

# id(parameter or buffer) -> dotted name, set by the outermost Module.__call__
_GRAPH_NAMES: ContextVar[dict | None] = ContextVar("ember_nn_graph_names", default=None)


class StateDictError(ValueError):
    """load_state_dict found missing, unexpected or mis-shaped entries (the message lists them all)."""


class LoadResult(NamedTuple):
    missing_keys: list
    unexpected_keys: list


class Module:
    """Base class. Subclasses call ``super().__init__()`` first, assign Parameters, buffers
    (``register_buffer``) and submodules as attributes, and define ``forward``."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_buffer_updates", {})
        object.__setattr__(self, "training", True)

    # ------------------------------------------------------------------ attributes
    def _check_init(self, name: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() is called "
                                 f"(call super().__init__() first in {type(self).__name__}.__init__)")

    def _forget(self, name: str) -> None:
        for d in (self._parameters, self._buffers, self._modules):
            d.pop(name, None)
        self._non_persistent.discard(name)
        self.__dict__.pop(name, None)

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, Parameter) and not isinstance(value, Buffer):
            self._check_init(name)
            self._forget(name)
            self._parameters[name] = value
        elif isinstance(value, Buffer):
            self._check_init(name)
            persistent = name not in self._non_persistent
            self._forget(name)
            self._buffers[name] = value
            if not persistent:
                self._non_persistent.add(name)
        elif isinstance(value, Module):
            self._check_init(name)
            self._forget(name)
            self._modules[name] = value
        elif "_parameters" in self.__dict__ and name in self._parameters:
            # an array replaces the values in place (like torch's `m.weight.data = ...`): ties survive
            old = self._parameters[name]
            if value is None:
                self._parameters[name] = None
            elif old is None:
                self._parameters[name] = Parameter(as_array(value, f"parameter {name!r}"))
            else:
                old.data = as_array(value, f"parameter {name!r}")
        elif "_buffers" in self.__dict__ and name in self._buffers:
            old = self._buffers[name]
            if value is None or old is None:
                self._buffers[name] = None if value is None else Buffer(as_array(value, f"buffer {name!r}"))
            else:
                old.data = as_array(value, f"buffer {name!r}")
        elif "_modules" in self.__dict__ and name in self._modules:
            if value is not None:
                raise TypeError(f"{name!r} is a submodule; assign a Module or None, not {type(value).__name__}")
            self._modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        # only called when normal lookup fails: parameters, buffers and submodules live in dicts
        d = self.__dict__
        if "_parameters" in d:
            if name in d["_parameters"]:
                return self._graph_tensor(name, d["_parameters"][name])
            if name in d["_buffers"]:
                return self._graph_tensor(name, d["_buffers"][name])
            if name in d["_modules"]:
                return d["_modules"][name]
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        if name in self._parameters or name in self._buffers or name in self._modules:
            self._forget(name)
        else:
            object.__delattr__(self, name)

    def _graph_tensor(self, local: str, p: Parameter | None) -> Tensor | None:
        if p is None:
            return None
        names = _GRAPH_NAMES.get()
        full = names.get(id(p)) if names else None
        return p.tensor(full if full is not None else local)

    # ------------------------------------------------------------------ registration
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._check_init(name)
        if param is not None and not isinstance(param, Parameter):
            param = Parameter(param)
        self._forget(name)
        self._parameters[name] = param

    def register_buffer(self, name: str, value, persistent: bool = True) -> None:
        """A non-trained array. Non-persistent buffers are left out of state_dict (as in torch)."""
        self._check_init(name)
        self._forget(name)
        self._buffers[name] = None if value is None else (value if isinstance(value, Buffer) else
                                                          Buffer(as_array(value, f"buffer {name!r}")))
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module({name!r}): {type(module).__name__} is not a Module")
        if not isinstance(name, str) or not name or "." in name:
            raise ValueError(f"module name must be a non-empty string without '.', got {name!r}")
        self._check_init(name)
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    def get_parameter(self, target: str) -> Parameter:
        """The Parameter object (not its graph tensor) at a dotted name, e.g. to tie weights."""
        mod, _, name = target.rpartition(".")
        m = self.get_submodule(mod) if mod else self
        if name not in m._parameters or m._parameters[name] is None:
            raise AttributeError(f"{type(m).__name__} has no parameter {name!r} ({target!r})")
        return m._parameters[name]

    def get_buffer(self, target: str) -> Buffer:
        mod, _, name = target.rpartition(".")
        m = self.get_submodule(mod) if mod else self
        if name not in m._buffers or m._buffers[name] is None:
            raise AttributeError(f"{type(m).__name__} has no buffer {name!r} ({target!r})")
        return m._buffers[name]

    def get_submodule(self, target: str) -> "Module":
        m = self
        for part in target.split(".") if target else []:
            if part not in m._modules or m._modules[part] is None:
                raise AttributeError(f"{type(m).__name__} has no submodule {part!r} ({target!r})")
            m = m._modules[part]
        return m

    # ------------------------------------------------------------------ traversal
    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        seen: set = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, prefix: str = "", remove_duplicate: bool = True, _memo: set | None = None):
        """(dotted name, module) for this module and all below it, depth first; "" is self."""
        memo = set() if _memo is None else _memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(f"{prefix}.{name}" if prefix else name, remove_duplicate, memo)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def _named_members(self, which: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen: set = set()
        mods = self.named_modules(prefix, remove_duplicate) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, p in getattr(m, which).items():
                if p is None or (remove_duplicate and id(p) in seen):
                    continue
                seen.add(id(p))
                yield (f"{mprefix}.{name}" if mprefix else name), p

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, Parameter); a parameter shared by two modules is listed once, first name."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Buffer]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def num_parameters(self) -> int:
        return sum(p.size for p in self.parameters())

    # ------------------------------------------------------------------ state
    def _state_entries(self, prefix: str = "") -> Iterator[tuple[str, "Module", str, Parameter]]:
        """(key, owner, local name, holder) in torch's state_dict order: a module's parameters, then
        its persistent buffers, then its children. Shared modules and tied weights appear under every
        name, as in torch, so a torch state_dict and ours have the same keys."""
        for name, p in self._parameters.items():
            if p is not None:
                yield prefix + name, self, name, p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                yield prefix + name, self, name, b
        for name, m in self._modules.items():
            if m is not None:
                yield from m._state_entries(f"{prefix}{name}.")

    def state_dict(self) -> "OrderedDict[str, np.ndarray]":
        """Dotted key -> numpy array (read-only; assign new arrays to change a module)."""
        return OrderedDict((k, p.data) for k, _, _, p in self._state_entries())

    def load_state_dict(self, state_dict, strict: bool = True) -> LoadResult:
        """Copy arrays (numpy, torch tensors — e.g. a torch module's ``state_dict()`` — or anything
        numpy can convert) into this module's parameters and buffers, cast to their dtypes.

        Mis-shaped entries are always an error; with strict=True so are missing and unexpected keys.
        Every problem is found before anything is changed, so a failed load leaves the module as it
        was. Returns (missing_keys, unexpected_keys), as torch does.
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict expects a mapping of name -> array, got {type(state_dict).__name__}")
        entries = list(self._state_entries())
        expected = {k for k, _, _, _ in entries}
        given = {}
        for k, v in state_dict.items():
            if k in expected:
                given[k] = as_array(v, f"state_dict[{k!r}]")
        missing = [k for k, _, _, _ in entries if k not in state_dict]
        unexpected = [k for k in state_dict if k not in expected]
        mismatched = [f"{k}: checkpoint has shape {tuple(given[k].shape)}, the module expects {p.shape}"
                      for k, _, _, p in entries if k in given and tuple(given[k].shape) != p.shape]
        problems = []
        if strict and missing:
            problems.append(f"missing key(s): {missing}")
        if strict and unexpected:
            problems.append(f"unexpected key(s): {unexpected}")
        if mismatched:
            problems.append("shape mismatch: " + "; ".join(mismatched))
        if problems:
            hint = _prefix_hint(missing, unexpected)
            raise StateDictError(f"error(s) loading state_dict into {type(self).__name__}:\n  " +
                                 "\n  ".join(problems) + (f"\n  hint: {hint}" if hint else ""))
        for k, _, _, p in entries:
            if k in given:
                p.data = given[k].astype(p.data.dtype, copy=False)  # in place: tied weights stay tied
        return LoadResult(missing, unexpected)

    # ------------------------------------------------------------------ modes and dtypes
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise TypeError(f"train(mode) expects a bool, got {type(mode).__name__}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def to(self, dtype) -> "Module":
        """Cast floating-point parameters and buffers to `dtype` (integer buffers are left alone)."""
        d = dt.as_dtype(dtype)
        if not d.is_float:
            raise TypeError(f"Module.to casts floating-point state; {d.name} is not a floating dtype")
        for p in list(self.parameters()) + list(self.buffers()):
            if p.dtype.is_float:
                p.data = p.data.astype(d.np)
        return self

    def float(self) -> "Module":
        return self.to(dt.float32)

    def half(self) -> "Module":
        return self.to(dt.float16)

    def bfloat16(self) -> "Module":
        return self.to(dt.bfloat16)

    def apply(self, fn) -> "Module":
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ buffer updates (training)
    def buffer_updates(self) -> "OrderedDict[str, Tensor]":
        """New buffer values computed by the most recent forward built in training mode (e.g.
        BatchNorm running statistics), as lazy Tensors keyed like state_dict.

        A graph cannot mutate the module that built it, so where torch updates buffers in place Ember
        hands the new values back: evaluate them with the outputs and load them,
        ``model.load_state_dict(em.reference(model.buffer_updates(), x=...), strict=False)``.
        """
        out: OrderedDict = OrderedDict()
        for prefix, m in self.named_modules():
            for name, t in m._buffer_updates.items():
                out[f"{prefix}.{name}" if prefix else name] = t
        return out

    # ------------------------------------------------------------------ calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        if _GRAPH_NAMES.get() is not None:
            return self.forward(*args, **kwargs)
        names: dict = {}
        for which in ("_parameters", "_buffers"):
            for name, p in self._named_members(which, "", True, True):
                names.setdefault(id(p), name)
        token = _GRAPH_NAMES.set(names)
        try:
            return self.forward(*args, **kwargs)
        finally:
            _GRAPH_NAMES.reset(token)

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        lines = ([extra] if extra else []) + lines
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"

    def __getstate__(self):
        # pending buffer updates are graph tensors, which do not pickle; they belong to one forward
        state = dict(self.__dict__)
        state["_buffer_updates"] = {}
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))


def _prefix_hint(missing: list, unexpected: list) -> str:
    """Spot the common checkpoint mistake of an extra or absent leading prefix ("model.", "module.")."""
    if not missing or not unexpected:
        return ""
    miss = set(missing)
    for key in unexpected:
        parts = key.split(".")
        for i in range(1, len(parts)):
            pre, rest = ".".join(parts[:i]) + ".", ".".join(parts[i:])
            if rest in miss:
                hits = sum(1 for u in unexpected if u.startswith(pre) and u[len(pre):] in miss)
                return (f"{hits} checkpoint key(s) match after removing the prefix {pre!r}; strip it, "
                        f"e.g. {{k.removeprefix({pre!r}): v for k, v in sd.items()}}")
    for key in missing:
        parts = key.split(".")
        for i in range(1, len(parts)):
            pre, rest = ".".join(parts[:i]) + ".", ".".join(parts[i:])
            if rest in set(unexpected):
                return f"checkpoint keys look like this module's keys without the prefix {pre!r}"
    return ""
