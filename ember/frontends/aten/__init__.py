"""ATen ops -> Ember's Tensor API: one converter per op, kept as data in `CONVERTERS`.

Each converter takes the op's arguments with every FX node already replaced by its Ember value (a
`Tensor`, a Python number, or a list/tuple of them) and returns an Ember value of the same structure
as the ATen op's result. The importer (`importer.py`) checks every result's shape against the shape
torch recorded for that node and casts it to torch's dtype, so a converter may compute in a wider
type (Ember's own promotion) without changing the answer's dtype.

Integer policy: Ember indexes with int32. torch's int64 tensors become int32 inside the graph (the
importer narrows int64 inputs at the boundary and widens int64 outputs back), so `_dtype` maps
torch.int64 to em.int32.

The converters live in one module per concept (elementwise, creation, reductions, contractions,
layers, movement, recurrent); `registry` holds the table they fill. Register a converter with
``@aten("add.Tensor", "add.Scalar")`` (from `registry`); keys are ``packet.overload`` names
(``relu.default``). Ops without a converter are decomposed by torch (core ATen decompositions)
before import; what is left unconverted is an `UnsupportedOpError`. Ops that draw random numbers
are not converted but drawn at call time (`random.RANDOM_OPS`).
"""
from __future__ import annotations

# The op modules register their converters on import (by concept; each adds to CONVERTERS).
from . import contractions, creation, elementwise, layers, movement, recurrent, reductions  # noqa: F401
from .random import RANDOM_OPS
from .registry import CONVERTERS, RECORDED_SHAPE_QUIRKS, REFUSED, Unsupported, UnsupportedOpError, _dtype, aten

__all__ = ["CONVERTERS", "RECORDED_SHAPE_QUIRKS", "REFUSED", "RANDOM_OPS", "Unsupported", "UnsupportedOpError", "aten", "_dtype"]
