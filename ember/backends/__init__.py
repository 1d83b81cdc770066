"""Backends: the Target registry (target.py) and one module per device kind that registers itself.

Importing any module of this package runs this file first, so every kind is registered before a
target is looked up. A new backend: its module, plus one import line here."""
from . import cpu_target as _cpu_target  # noqa: F401
from . import cuda_target as _cuda_target  # noqa: F401
from . import target  # noqa: F401  (the registry, before the kinds that fill it)
