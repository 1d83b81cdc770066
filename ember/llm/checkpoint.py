"""Weights from a Hugging Face checkpoint directory: `model.safetensors`, or shards listed by
`model.safetensors.index.json`, read with the `safetensors` package (numpy arrays, bfloat16 through
ml_dtypes). A missing file, a truncated shard or a missing tensor is one `CheckpointError` line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np


class CheckpointError(ValueError):
    """A missing, truncated or inconsistent checkpoint file (the message names it)."""


INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"


def shard_files(path: Path) -> dict:
    """tensor name -> the file holding it."""
    path = Path(path)
    idx = path / INDEX
    if idx.is_file():
        try:
            wmap = json.loads(idx.read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise CheckpointError(f"{idx}: not a safetensors index (no weight_map)") from None
        files = {}
        for name, fn in wmap.items():
            f = path / fn
            if not f.is_file():
                raise CheckpointError(f"{path}: shard {fn} (listed in {INDEX} for {name}) is missing")
            files[name] = f
        return files
    f = path / SINGLE
    if not f.is_file():
        raise CheckpointError(f"{path}: no {SINGLE} or {INDEX}")
    return {name: f for name in _names(f)}


def _names(f: Path) -> list:
    from safetensors import safe_open
    try:
        with safe_open(str(f), framework="numpy") as h:
            return list(h.keys())
    except Exception as e:  # noqa: BLE001 - safetensors raises its own error types
        raise CheckpointError(f"{f}: cannot read safetensors file ({_reason(e)})") from None


def _reason(e: Exception) -> str:
    return str(e).splitlines()[0][:200] if str(e) else type(e).__name__


class Checkpoint:
    """Lazy access to a checkpoint's tensors, each converted to `dtype` (a numpy dtype) on read."""

    def __init__(self, path, dtype=None):
        self.path = Path(path)
        self.files = shard_files(self.path)
        self.dtype = dtype
        self._handles: dict = {}

    def __contains__(self, name: str) -> bool:
        return name in self.files

    def get(self, name: str, shape: tuple | None = None) -> np.ndarray:
        if name not in self.files:
            raise CheckpointError(f"{self.path}: tensor {name!r} is missing from the checkpoint")
        f = self.files[name]
        from safetensors import safe_open
        try:
            with safe_open(str(f), framework="numpy") as h:
                arr = h.get_tensor(name)
        except Exception as e:  # noqa: BLE001
            raise CheckpointError(f"{f}: cannot read tensor {name!r} ({_reason(e)}; truncated file?)") from None
        if shape is not None and tuple(arr.shape) != tuple(shape):
            raise CheckpointError(f"{f}: tensor {name!r} has shape {tuple(arr.shape)}, the config implies {tuple(shape)}")
        if self.dtype is not None and arr.dtype != self.dtype:
            arr = arr.astype(self.dtype)
        return np.ascontiguousarray(arr)

    def dtype_of(self, name: str):
        from safetensors import safe_open
        f = self.files[name]
        try:
            with safe_open(str(f), framework="numpy") as h:
                return h.get_slice(name).get_dtype()
        except Exception as e:  # noqa: BLE001
            raise CheckpointError(f"{f}: cannot read tensor {name!r} ({_reason(e)})") from None
