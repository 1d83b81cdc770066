"""Frontends that build Ember graphs from other frameworks. `from_torch` imports a PyTorch module
through torch.export (importer.py, function.py; op converters in the aten package);
`torch.compile(backend="ember")` is dynamo.py. torch is imported only when used."""
from __future__ import annotations


def from_torch(module, example_inputs, device=None, search="none", **kwargs):
    """Import a torch.nn.Module through torch.export and compile it; see function.from_torch."""
    from .function import from_torch as _from_torch
    return _from_torch(module, example_inputs, device, search, **kwargs)


def register_torch_backend() -> None:
    """Register `torch.compile(..., backend="ember")`: at once if torch's Dynamo is loaded, else when
    it loads. `import ember` does this; installed, torch also finds it through the entry point."""
    from .dynamo import register_backend
    register_backend()
