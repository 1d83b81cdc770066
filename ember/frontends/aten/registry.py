"""The converter registry shared by the ATen op modules: `CONVERTERS`, `REFUSED`, the `@aten`
registration decorator, the import errors, and the small argument helpers every module uses."""
from __future__ import annotations

from typing import Callable

from ... import dtypes as dt
from ...tensor import Tensor, _as_tensor

CONVERTERS: dict[str, Callable] = {}


class UnsupportedOpError(NotImplementedError):
    """An ATen op (or an argument value of one) that Ember cannot import. The message names the op
    and where it is in the model."""


class Unsupported:
    """A value Ember cannot produce (e.g. max_pool's indices). Harmless while unused; any op that
    reads it, or a model output that is it, raises UnsupportedOpError with `why`."""

    def __init__(self, why: str):
        self.why = why


# op key -> predicate(ours, recorded): shapes where torch's recorded (fake-tensor) result is known to
# differ from what the op returns when it runs, and the converter's shape is the one eager returns
RECORDED_SHAPE_QUIRKS: dict = {}


def aten(*names: str):
    def deco(fn):
        for n in names:
            CONVERTERS[n if "." in n else n + ".default"] = fn
        return fn
    return deco


def _dtype(torch_dtype):
    """Ember dtype for a torch dtype, with the int64 -> int32 narrowing (see module docstring)."""
    if torch_dtype is None:
        return None
    name = str(torch_dtype).replace("torch.", "")
    if name in ("int64", "int16", "int8", "uint8"):
        return dt.int32
    try:
        return dt.as_dtype(name)
    except TypeError:
        raise UnsupportedOpError(f"torch dtype {torch_dtype} has no Ember equivalent") from None


def _t(x, like: Tensor | None = None) -> Tensor:
    """A Tensor from a Tensor or a Python number (numbers take like's dtype category rules)."""
    if isinstance(x, Tensor):
        return x
    return _as_tensor(x, None if like is None else dt.promote_with_scalar(like.dtype, x))


def _dims(x: Tensor, dim) -> tuple:
    """Reduction axes as ATen gives them: None or [] means all axes."""
    if dim is None:
        return tuple(range(x.ndim))
    if isinstance(dim, int):
        dim = [dim]
    dim = list(dim)
    if not dim:
        return tuple(range(x.ndim))
    return tuple(d % max(x.ndim, 1) for d in dim)


# ------------------------------------------------------------------------------------------------
# refused ops: kept whole by the decomposition step so the error names them and says why

_RANDOM_WHY = ("random numbers Ember cannot draw: rand, randn, randint (and their _like forms), bernoulli "
               "with a fixed p and dropout are drawn at call time from torch's generator; other random ops "
               "are not (pass the random tensor in as an input instead)")
REFUSED: dict[str, str] = {k: _RANDOM_WHY for k in (
    "bernoulli.default", "randperm.default", "normal.Tensor_float", "normal.float_Tensor",
    "normal.Tensor_Tensor", "uniform.default", "exponential.default", "multinomial.default")}
REFUSED.update({k: "its output shape depends on the data (Ember's shapes are static)" for k in (
    "nonzero.default", "masked_select.default", "unique.default", "_unique2.default", "unique_dim.default",
    "unique_consecutive.default")})
