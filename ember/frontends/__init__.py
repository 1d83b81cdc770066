"""Frontends that build Ember graphs from other frameworks. `from_torch` imports a PyTorch module
through torch.export (pytorch.py; op converters in aten.py). torch is imported only when used."""
from __future__ import annotations


def from_torch(module, example_inputs, device=None, search="none", **kwargs):
    """Import a torch.nn.Module through torch.export and compile it; see pytorch.from_torch."""
    from .pytorch import from_torch as _from_torch, register_backend
    register_backend()
    return _from_torch(module, example_inputs, device, search, **kwargs)


def register_torch_backend() -> None:
    """Register `torch.compile(..., backend="ember")` (done automatically when ember is imported
    after torch, and by from_torch)."""
    from .pytorch import register_backend
    register_backend()
