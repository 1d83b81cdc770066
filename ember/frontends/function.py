"""`em.from_torch(module, example_inputs)` and the callable it returns.

    fn = em.from_torch(model, (x,), device="cuda")   # torch.export -> core ATen -> Ember graph -> Program
    y = fn(x)                                         # torch tensors in, torch tensors out

`from_torch` exports and imports the module (importer.py), then `TorchFunction` compiles the graph
with `em.compile` and converts at the boundary (int64 -> int32 in, dtypes restored out; CUDA tensors
zero-copy on CUDA). The compiler is imported only inside `TorchFunction`.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .importer import ImportedGraph, TorchImportError, _torch, export, import_graph


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
        self._arg_names = positional_names(module)
        n_out = len(graph.outputs)
        probe = tree_unflatten(list(range(n_out)), graph.out_spec) if graph.out_spec is not None else None
        self._out_form = "leaf" if probe == 0 and n_out == 1 else "tuple" if probe == tuple(range(n_out)) else "tree"
        self.program = None
        self._takes = set()
        if tensors:
            from ..pipeline import compile as em_compile
            self.program = em_compile(tuple(tensors), device=device, search=search, **compile_options)
            self._takes = set(self.program.inputs)

    # ------------------------------------------------------------------ calling
    def _buffer(self, fqn: str):
        """The module's buffer `fqn`, its owning submodule found once (`get_buffer` walks the module tree
        on every call: ~10 us a buffer, 120 of them in an EfficientNet's BatchNorms); read from the owner's
        `_buffers` each call, so a buffer the module reassigns is still the one read."""
        found = self.__dict__.setdefault("_buffer_owners", {}).get(fqn)
        if found is None:
            owner, _, name = fqn.rpartition(".")
            sub = self.module.get_submodule(owner) if owner else self.module
            self.module.get_buffer(fqn)  # (its checks and errors: a missing buffer, not a buffer)
            found = self._buffer_owners[fqn] = (sub, name)
        t = found[0]._buffers.get(found[1])
        return t if t is not None else self.module.get_buffer(fqn)

    def _flatten(self, args, kwargs) -> list:
        if not kwargs and len(args) == self._n_positional and self._positional_only:
            return args  # the common case, without pytree's ~20 us
        from torch.utils._pytree import tree_flatten
        want = self.graph.in_spec
        if want is not None and kwargs:  # keywords in the import's order (pytree compares dict key order)
            order = list(want.child(1).context)
            if set(order) == set(kwargs):
                kwargs = {k: kwargs[k] for k in order}
        flat, spec = tree_flatten((tuple(args), dict(kwargs)))
        if spec != want:
            raise TorchImportError("from_torch: " + argument_mismatch(spec, want, self._arg_names))
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
            if kind == "random":
                t = ref()  # drawn in graph order = eager's order (aten/random.py), even if unused
            else:
                t = flat[ref] if kind == "user" else self._buffer(ref)
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
            if name in self._takes:  # (an input the outputs do not depend on is checked, not fed)
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
            if t.dtype != want and i < n_out:  # (a buffer's new value is converted by its copy below)
                t = t.to(want)
            values.append(t)
        if self.graph.mutations:
            dsts = [self._buffer(target) if kind == "buffer" else flat[target] for kind, target, _, _ in self.graph.mutations]
            with torch.no_grad():  # (one multi-tensor copy: 120 BatchNorm buffers of an EfficientNet were 120 launches)
                same = [(d, v) for d, v in zip(dsts, values[n_out:]) if d.dtype == v.dtype and d.device == v.device]
                if same:
                    torch._foreach_copy_([d for d, _ in same], [v for _, v in same])
                for d, v in zip(dsts, values[n_out:]):
                    if not (d.dtype == v.dtype and d.device == v.device):
                        d.copy_(v)
        if self._out_form == "leaf":
            return values[0]
        if self._out_form == "tuple":
            return tuple(values[:n_out])
        from torch.utils._pytree import tree_unflatten
        return tree_unflatten(values[:n_out], self.graph.out_spec)

    # ------------------------------------------------------------------ inspection
    def reference(self, *args, **kwargs):
        """The same graph evaluated by Ember's numpy reference (float64 inside), as CPU torch
        tensors in the model's output structure. Does not update buffers; random numbers are drawn as
        a call draws them."""
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


def _signature(module):
    """The signature of `module`'s forward (or of the function it wraps); None if unreadable."""
    import inspect
    fn = getattr(module, "_ember_fn", None) or getattr(module, "forward", None)
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def positional_names(module) -> list:
    """The names of `module`'s positional parameters, for error messages; [] when unreadable."""
    sig = _signature(module)
    params = list(sig.parameters.values()) if sig is not None else []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _check_example_arguments(module, args: tuple, kwargs: dict | None) -> None:
    """Example inputs that do not fit forward's signature: one line naming it, before torch.export."""
    sig = _signature(module)
    if sig is None:
        return
    try:
        sig.bind(*args, **(kwargs or {}))
    except TypeError as e:
        name = getattr(module, "_ember_fn", None)
        name = getattr(name, "__name__", None) or f"{type(module).__name__}.forward"
        raise TorchImportError(f"from_torch: the example inputs do not fit {name}{sig}: {e}") from None


def _structure(spec) -> str:
    """A short description of one argument's pytree structure."""
    if spec.is_leaf():
        return "a single value"
    kind = spec.type.__name__ if spec.type is not None else "container"
    if spec.type is dict:
        return f"a dict with keys {sorted(spec.context)}"
    return f"a {kind} of {spec.num_children}"


def argument_mismatch(got, want, names: list) -> str:
    """One line saying how a call's arguments (pytree spec `got`) differ from the import's (`want`)."""
    g_args, g_kw = got.child(0), got.child(1)
    w_args, w_kw = want.child(0), want.child(1)
    n_want, n_got = w_args.num_children, g_args.num_children
    problems = []
    if n_got != n_want:
        shown = f" ({', '.join(names[:n_want])})" if len(names) >= n_want > 0 else ""
        problems.append(f"expected {n_want} positional input{'s' if n_want != 1 else ''}{shown}, got {n_got}")
    gk, wk = list(g_kw.context or ()), list(w_kw.context or ())
    extra, missing = [k for k in gk if k not in wk], [k for k in wk if k not in gk]
    if extra:
        took = f"keyword arguments {wk}" if wk else "no keyword arguments"
        problems.append(f"unexpected keyword argument{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))} "
                        f"(the model was imported with {took})")
    if missing:
        problems.append(f"missing keyword argument{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}")
    if not problems:
        for i, (g, w) in enumerate(zip(g_args.children(), w_args.children())):
            if g != w:
                name = f" ({names[i]})" if i < len(names) else ""
                problems.append(f"positional input #{i}{name} is {_structure(g)}, the import was for {_structure(w)}")
                break
        else:
            for k in wk:
                g, w = g_kw.child(gk.index(k)), w_kw.child(wk.index(k))
                if g != w:
                    problems.append(f"keyword argument {k!r} is {_structure(g)}, the import was for {_structure(w)}")
                    break
    return "; ".join(problems) or "the arguments are structured differently from the example inputs"


def _as_module(fn):
    torch = _torch()
    if isinstance(fn, torch.nn.Module):
        return fn

    class Wrapped(torch.nn.Module):
        def forward(self, *args, **kwargs):
            return fn(*args, **kwargs)
    Wrapped.__name__ = getattr(fn, "__name__", "function")
    w = Wrapped()
    w._ember_fn = fn  # (its signature names the inputs in error messages)
    return w


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
    _check_example_arguments(module, tuple(example_inputs), example_kwargs)
    from ..backends.target import get_target
    dev = get_target(device)  # an unknown or absent device fails here, before the export
    with torch.no_grad():
        ep = export(module, tuple(example_inputs), example_kwargs)
    graph = import_graph(ep, precision=precision)
    return TorchFunction(module, graph, dev, search, **compile_options)
