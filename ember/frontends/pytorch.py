"""The PyTorch frontend's public names, in one place: `em.from_torch(module, example_inputs)` and
`torch.compile(backend="ember")`.

    fn = em.from_torch(model, (x,), device="cuda")   # torch.export -> core ATen -> Ember graph -> Program
    y = fn(x)                                         # torch tensors in, torch tensors out

The work is split by concept: `importer` (torch.export -> an Ember graph), `function` (from_torch and
the `TorchFunction` wrapper that compiles and calls it), `dynamo` (the torch.compile backend), and
the ATen op converters (`aten` and the modules it gathers).

torch is imported only inside these functions (PyTorch is optional for the rest of Ember).
"""
from __future__ import annotations

from .aten import UnsupportedOpError
from .dynamo import ember_backend, register_backend
from .function import TorchFunction, from_torch
from .importer import (
                       PRECISIONS,
                       ImportedGraph,
                       TorchImportError,
                       export,
                       import_graph,
                       refused_ops,
                       supported_ops,
                       tf32_kinds,
                       where_in_model,
)

__all__ = ["from_torch", "import_graph", "export", "TorchFunction", "ImportedGraph", "TorchImportError",
           "UnsupportedOpError", "ember_backend", "register_backend", "supported_ops", "refused_ops",
           "tf32_kinds", "where_in_model", "PRECISIONS"]
