"""Parameter and Buffer: the arrays a Module owns.

A parameter is a host numpy array that enters the graph as a DATA node (``em.tensor(array, name=...)``).
The array is a private, read-only copy: graph nodes are hash-consed on their content, so an array that
changed after a graph was built would make that graph lie about its own constants. To change a
parameter, assign a new array (``module.weight = new_array`` or ``load_state_dict``); graphs built
earlier keep the values they were built with.

The graph node is cached per name, so calling a model many times hashes each weight once.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..arrays import to_numpy
from ..tensor import Tensor, tensor


def as_array(value, what: str) -> np.ndarray:
    """A numpy array from numpy, torch (bfloat16 included), DLPack or nested lists; refuses lazy
    Ember tensors, whose values exist only once a graph is evaluated."""
    if isinstance(value, Tensor):
        raise TypeError(f"{what}: got a lazy Ember Tensor; parameters and buffers hold concrete arrays "
                        "(evaluate it first, e.g. with em.reference)")
    if isinstance(value, Parameter):
        return value.data
    try:
        arr = to_numpy(value)
    except Exception as e:  # noqa: BLE001  (any failure to convert is the caller's bad input)
        raise TypeError(f"{what}: cannot convert {type(value).__name__} to an array ({e})") from None
    if arr.dtype.kind not in "biuf" and str(arr.dtype) != "bfloat16":
        raise TypeError(f"{what}: arrays of dtype {arr.dtype} are not supported")
    return arr


class Parameter:
    """A named array of a Module that training would update (``requires_grad``)."""

    __slots__ = ("_data", "requires_grad", "_cached")

    def __init__(self, data, requires_grad: bool = True):
        self._cached = None
        self.requires_grad = requires_grad
        self.data = data

    @property
    def data(self) -> np.ndarray:
        """The values: a read-only numpy array (assign a new array to change them)."""
        return self._data

    @data.setter
    def data(self, value) -> None:
        arr = np.array(as_array(value, type(self).__name__), copy=True)
        dt.as_dtype(arr.dtype)  # fail now, not when the graph is built, for dtypes Ember lacks
        arr.setflags(write=False)
        self._data = arr
        self._cached = None

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def dtype(self) -> dt.DType:
        return dt.as_dtype(self._data.dtype)

    @property
    def size(self) -> int:
        return int(self._data.size)

    def numel(self) -> int:
        return int(self._data.size)

    def numpy(self) -> np.ndarray:
        return self._data

    def tensor(self, name: str) -> Tensor:
        """This array as a DATA node called `name` (the name keeps equal-valued parameters distinct)."""
        if self._cached is None or self._cached[0] != name:
            self._cached = (name, tensor(self._data, dtype=self.dtype, name=name))
        return self._cached[1]

    def __getstate__(self):
        # graph nodes refuse pickling; the cached node is rebuilt on demand
        return {"data": self._data, "requires_grad": self.requires_grad}

    def __setstate__(self, state) -> None:
        self._cached = None
        self.requires_grad = state["requires_grad"]
        self._data = state["data"]
        self._data.setflags(write=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype.name})"


class Buffer(Parameter):
    """Module state that is not trained (e.g. BatchNorm running statistics)."""

    __slots__ = ()

    def __init__(self, data):
        super().__init__(data, requires_grad=False)
