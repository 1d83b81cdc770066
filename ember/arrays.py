"""Host arrays at Ember's boundary: converting user inputs (numpy, torch, anything with __array__
or DLPack) and binding named symbolic dimensions from their shapes."""
from __future__ import annotations

import math
from typing import Mapping, NamedTuple, Sequence

import numpy as np

from . import dtypes as dt
from . import symbolic as sm
from .dtypes import DType


class InputError(ValueError):
    """A missing, unexpected or mis-shaped input (the message names it)."""


class InputSpec(NamedTuple):
    """What a program expects of one named input (duck-compatible with an INPUT graph node)."""
    arg: str
    dtype: DType
    shape: tuple


class DeviceArray:
    """A GPU array from another library (torch.cuda tensor, anything with __cuda_array_interface__),
    used in place by the CUDA backend: only its pointer, shape and dtype are read."""

    def __init__(self, obj, ptr: int, shape: tuple, dtype: np.dtype):
        self.obj, self.ptr, self.shape, self.dtype = obj, ptr, tuple(shape), np.dtype(dtype)
        self.ndim = len(self.shape)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


_TORCH_DTYPES: dict = {}  # torch dtype -> numpy dtype (on every call's path: no string work there)


def _torch_np_dtype(tdtype):
    hit = _TORCH_DTYPES.get(tdtype)
    if hit is None:
        name = str(tdtype).replace("torch.", "")
        if name not in dt.BY_NAME:
            raise InputError(f"torch dtype {tdtype} has no Ember equivalent")
        hit = _TORCH_DTYPES[tdtype] = dt.BY_NAME[name].np
    return hit


def device_array(x) -> DeviceArray | None:
    """Wrap x if it lives on a GPU, else None."""
    if type(x).__module__.startswith("torch") and getattr(x, "is_cuda", False):
        if not x.is_contiguous():
            raise InputError("CUDA tensor inputs must be contiguous (call .contiguous())")
        return DeviceArray(x, x.data_ptr(), x.shape, _torch_np_dtype(x.dtype))
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        if cai.get("strides") not in (None,):
            raise InputError("__cuda_array_interface__ inputs must be C-contiguous")
        return DeviceArray(x, cai["data"][0], tuple(cai["shape"]), np.dtype(cai["typestr"]))
    return None


def to_numpy(x) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__
    if mod.startswith("torch"):
        t = x.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if str(t.dtype) == "torch.bfloat16":
            import ml_dtypes
            return t.view(__import__("torch").int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    if hasattr(x, "__dlpack__") and not hasattr(x, "__array__"):
        return np.from_dlpack(x)
    return np.asarray(x)


def _is_float(d: np.dtype) -> bool:
    return d.kind == "f" or str(d) == "bfloat16" or d == np.dtype("V2")


def coerce(name: str, arr: np.ndarray, dtype: DType, narrow_floats: bool = True) -> np.ndarray:
    """Convert an input array to the graph input's dtype; refuse lossy kind changes, and with
    narrow_floats off also a float input wider than the graph's float (float64 into float32)."""
    src = arr.dtype
    if src == dtype.np:
        return arr
    if not narrow_floats and dtype.is_float and _is_float(src) and src.itemsize >= dtype.itemsize:
        raise InputError(f"input {name!r} has dtype {src}, the program expects {dtype.name} (cast it, or "
                         f"compile with em.compile(..., cast_inputs=True) to convert inputs on every call)")
    kind_ok = (dtype.is_float and src.kind in "fiub") or (dtype.is_int and src.kind in "iub") or \
              (dtype.is_bool and src.kind == "b") or (dtype.is_float and src == np.dtype("V2"))
    if str(src) == "bfloat16":
        kind_ok = dtype.is_float
    if not kind_ok:
        raise InputError(f"input {name!r} has dtype {src}, expected {dtype.name} (cast it explicitly)")
    return arr.astype(dtype.np)


def bind_dims(inputs: Sequence, arrays: Mapping[str, np.ndarray], bound: dict | None = None) -> dict:
    """Unify input node shapes (named dims) with array shapes; returns {dim_name: int}."""
    env: dict = dict(bound or {})
    for node in inputs:
        name = node.arg
        a = arrays[name]
        if a.ndim != len(node.shape):
            raise InputError(f"input {name!r} expects rank {len(node.shape)} {sm.shape_str(node.shape)}, "
                             f"got an array of shape {a.shape}")
        for d, (e, n) in enumerate(zip(node.shape, a.shape)):
            if e.is_const:
                if e.value != n:
                    raise InputError(f"input {name!r} expects shape {sm.shape_str(node.shape)}, got {a.shape} "
                                     f"(dimension {d})")
            elif e.op == "var":
                dn = e.args[0]
                if dn in env and env[dn] != n:
                    raise InputError(f"dimension {dn!r} is {env[dn]} from an earlier input but {n} in input "
                                     f"{name!r} (shape {a.shape})")
                env[dn] = n
    for node in inputs:  # compound dims (e.g. 2*B) must agree once names are bound
        a = arrays[node.arg]
        for e, n in zip(node.shape, a.shape):
            if not e.is_const and e.op != "var":
                try:
                    v = sm.evaluate(e, env)
                except KeyError:
                    continue
                if v != n:
                    raise InputError(f"input {node.arg!r}: dimension {e} = {v} but the array has {n}")
    return env


def check_inputs(inputs: Sequence, given: Mapping[str, object], keep_device: bool = False,
                 narrow_floats: bool = True) -> dict:
    """Match named inputs to graph inputs, convert them to numpy (or, with keep_device, wrap GPU
    arrays as DeviceArray), check names and dtypes. narrow_floats=False refuses a float input wider
    than the graph's (a compiled program's default: float64 data silently rounded to float32 hides
    a mistake); the reference keeps converting, it evaluates in float64 anyway."""
    want = {n.arg: n for n in inputs}
    missing = sorted(set(want) - set(given))
    extra = sorted(set(given) - set(want))
    if missing:
        raise InputError(f"missing input(s) {missing}; the graph takes {sorted(want)}")
    if extra:
        raise InputError(f"unexpected input(s) {extra}; the graph takes {sorted(want)}")
    out = {}
    for k in want:
        d = device_array(given[k]) if keep_device else None
        if d is not None:
            if d.dtype != want[k].dtype.np:
                raise InputError(f"input {k!r} is a device array of dtype {d.dtype}, expected {want[k].dtype.name}")
            out[k] = d
        else:
            out[k] = coerce(k, to_numpy(given[k]), want[k].dtype, narrow_floats)
    return out
