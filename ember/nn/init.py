"""Parameter initialisation with PyTorch's default distributions, drawn from numpy Generators.

Determinism: every layer takes ``seed`` (an int, a ``numpy.random.Generator`` or None). None draws
from this module's default generator, seeded with 0 at import and reset by ``manual_seed``, so a
program that builds the same layers in the same order gets the same weights every run. Composite
modules (MLP, Transformer) turn their seed into one Generator and pass it to their children, so one
seed fixes the whole model.

The values match torch's *distributions*, not its random streams: to reproduce a torch model exactly,
load its state_dict.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt

_default = np.random.default_rng(0)


def manual_seed(seed: int) -> None:
    """Reset the default generator (used by layers built without a seed)."""
    global _default
    _default = np.random.default_rng(seed)


def generator(seed=None) -> np.random.Generator:
    if seed is None:
        return _default
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed))
    raise TypeError(f"seed must be an int, a numpy.random.Generator or None, got {type(seed).__name__}")


def float_dtype(dtype) -> dt.DType:
    d = dt.as_dtype(dtype)
    if not d.is_float:
        raise TypeError(f"parameters must have a floating dtype, got {d.name}")
    return d


def uniform(shape, bound: float, rng: np.random.Generator, dtype=dt.float32) -> np.ndarray:
    """U(-bound, bound), drawn in float64 and rounded to `dtype`."""
    return rng.uniform(-bound, bound, size=shape).astype(float_dtype(dtype).np)


def normal(shape, std: float, rng: np.random.Generator, dtype=dt.float32) -> np.ndarray:
    return (rng.standard_normal(size=shape) * std).astype(float_dtype(dtype).np)


def kaiming_uniform_bound(fan_in: int) -> float:
    """torch's default for Linear/Conv weights: kaiming_uniform_(a=sqrt(5)), whose bound
    sqrt(6 / ((1 + a²) fan_in)) simplifies to 1/sqrt(fan_in) — the same bound torch uses for biases."""
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0


def ones(shape, dtype=dt.float32) -> np.ndarray:
    return np.ones(shape, float_dtype(dtype).np)


def zeros(shape, dtype=dt.float32) -> np.ndarray:
    return np.zeros(shape, float_dtype(dtype).np)
