"""`torch.compile(model, backend="ember")`: the Dynamo backend and its registration.

torch finds the backend through the ``torch_dynamo_backends`` entry point declared in pyproject.toml
(whatever the import order); `register_backend` also registers it directly, for a checkout used
without being installed.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

# The importer and compiler are imported on the first compiled call: `import ember` loads this module
# to register the backend and must stay cheap.


class _DynamoCompiled:
    """What the `ember` backend returns for one Dynamo graph: compiled lazily per input signature
    (shapes, dtypes, scalar values), so graphs Dynamo marks dynamic still run with static shapes."""

    def __init__(self, gm, device: str | None, search: str, options: dict):
        self.gm, self.device, self.search, self.options = gm, device, search, options
        self._cache: dict = {}

    def _key(self, args):
        import torch
        return tuple((tuple(a.shape), a.dtype, a.device.type) if isinstance(a, torch.Tensor) else ("v", a)
                     for a in args)

    def __call__(self, *args):
        import torch

        from .function import TorchFunction, _warn_if_grad
        from .importer import export, import_graph
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


_REGISTRY = "torch._dynamo.backends.registry"


def register_backend(registry=None) -> None:
    """Make ``torch.compile(..., backend="ember")`` available (idempotent). Registers now when
    torch's backend registry is loaded, else as soon as it loads (see `_AfterImport`), so neither
    the import order of torch and ember nor an install without the entry point matters, and
    `import ember` never imports Dynamo itself."""
    if registry is None:
        registry = sys.modules.get(_REGISTRY)
    if registry is None:
        if not any(isinstance(f, _AfterImport) for f in sys.meta_path):
            sys.meta_path.insert(0, _AfterImport(_REGISTRY, register_backend))
        return
    # Installed with the entry point, "ember" may already be in _BACKENDS (found, loaded on lookup).
    if "ember" not in registry._BACKENDS and "ember" not in getattr(registry, "_COMPILER_FNS", {}):
        registry.register_backend(name="ember")(ember_backend)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then(module)` right after module `name` is first executed: finds the module's spec
    with the ordinary path finder and wraps its loader's exec_module. One use, then removed."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run, then = spec.loader.exec_module, self.then

        def exec_module(module):
            run(module)
            try:
                then(module)
            except Exception as e:  # noqa: BLE001 - torch must import even if registration fails
                import warnings
                warnings.warn(f"could not register the 'ember' torch.compile backend: {e}", stacklevel=2)
        spec.loader.exec_module = exec_module
        return spec
