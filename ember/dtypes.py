"""Element types and PyTorch-style type promotion.

Ember's dtypes are a small closed set. Promotion follows PyTorch: categories bool < integer < floating;
within a category the wider type wins; float16 with bfloat16 gives float32; Python scalars are "weak"
(they never widen a tensor's dtype inside its own category, but an int tensor meeting a Python float
becomes the default float, float32).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True, eq=True)
class DType:
    name: str
    itemsize: int
    kind: str  # "b" bool, "i" signed integer, "f" floating
    rank: int  # order inside the kind (wider = larger)
    c_name: str  # type used in generated C for storage
    cuda_name: str  # type used in generated CUDA for storage

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind == "i"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def np(self) -> np.dtype:
        return _NUMPY[self.name]

    def __repr__(self) -> str:
        return f"em.{self.name}"


bool_ = DType("bool", 1, "b", 0, "unsigned char", "bool")
int32 = DType("int32", 4, "i", 1, "int", "int")
int64 = DType("int64", 8, "i", 2, "long long", "long long")
float16 = DType("float16", 2, "f", 1, "unsigned short", "__half")
bfloat16 = DType("bfloat16", 2, "f", 1, "unsigned short", "__nv_bfloat16")
float32 = DType("float32", 4, "f", 2, "float", "float")
float64 = DType("float64", 8, "f", 3, "double", "double")

ALL = (bool_, int32, int64, float16, bfloat16, float32, float64)
BY_NAME = {d.name: d for d in ALL}
BY_NAME["bool_"] = bool_
default_float = float32
default_int = int32  # Ember indexes with int32; PyTorch's int64 indices are narrowed at the frontend

_NUMPY = {
    "bool": np.dtype(np.bool_),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
}
_FROM_NUMPY = {v: BY_NAME[k] for k, v in _NUMPY.items()}


def as_dtype(d) -> DType:
    """Accept a DType, a name ("float32", "bf16"), a numpy dtype or a torch dtype."""
    if isinstance(d, DType):
        return d
    if isinstance(d, str):
        aliases = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32",
                   "i64": "int64", "f64": "float64", "half": "float16", "float": "float32",
                   "int": "int32", "long": "int64", "double": "float64"}
        name = aliases.get(d, d)
        if name in BY_NAME:
            return BY_NAME[name]
        raise TypeError(f"unknown dtype name {d!r}; known: {sorted(k for k in BY_NAME if k != 'bool_')}")
    if type(d).__module__ == "torch" or str(type(d)) == "<class 'torch.dtype'>":
        name = str(d).replace("torch.", "")
        if name in BY_NAME:
            return BY_NAME[name]
        raise TypeError(f"torch dtype {d} has no Ember equivalent")
    try:
        npd = np.dtype(d)
    except TypeError:
        raise TypeError(f"cannot interpret {d!r} as a dtype") from None
    if npd in _FROM_NUMPY:
        return _FROM_NUMPY[npd]
    if npd.kind == "i" or npd.kind == "u":
        return int64 if npd.itemsize > 4 else int32
    raise TypeError(f"numpy dtype {npd} has no Ember equivalent")


def promote(a: DType, b: DType) -> DType:
    """Promotion of two tensor dtypes (PyTorch rules)."""
    if a == b:
        return a
    order = "bif"
    if order.index(a.kind) != order.index(b.kind):
        return a if order.index(a.kind) > order.index(b.kind) else b
    if {a, b} == {float16, bfloat16}:
        return float32
    return a if a.rank > b.rank else b


def scalar_dtype(v) -> DType:
    """The category of a Python scalar (used as a weak type)."""
    if isinstance(v, (bool, np.bool_)):
        return bool_
    if isinstance(v, (int, np.integer)):
        return int64 if isinstance(v, np.int64) else int32
    if isinstance(v, (float, np.floating)):
        return float32
    raise TypeError(f"expected a number, got {type(v).__name__}")


def promote_with_scalar(t: DType, v) -> DType:
    """A tensor of dtype t combined with a Python scalar v: the scalar only raises the category."""
    s = scalar_dtype(v)
    order = "bif"
    if order.index(s.kind) > order.index(t.kind):
        return default_float if s.kind == "f" else default_int
    return t


def finfo_max(d: DType) -> float:
    return float(np.finfo(d.np).max)


def min_value(d: DType):
    """Identity of max-reduce: -inf for floats, the smallest integer for ints, False for bool."""
    if d.is_float:
        return float("-inf")
    if d.is_int:
        return int(np.iinfo(d.np).min)
    return False
