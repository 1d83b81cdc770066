"""Device names -> executors, and the default device (CUDA when a GPU is present, else the CPU)."""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def cuda_available() -> bool:
    try:
        from cuda.bindings import driver
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return False
        err, n = driver.cuDeviceGetCount()
        return int(err) == 0 and n > 0
    except Exception:
        return False


def default_device() -> str:
    return "cuda" if cuda_available() else "cpu"


def normalize(device: str | None) -> str:
    d = (device or default_device()).lower()
    if d.startswith("cuda"):
        return "cuda"
    if d == "cpu":
        return "cpu"
    raise ValueError(f"unknown device {device!r}: use 'cpu' or 'cuda'")


def executor_for(device: str):
    d = normalize(device)
    if d == "cpu":
        from ..backends.cpu import CPUExecutor
        return CPUExecutor
    from ..backends.cuda import CUDAExecutor
    return CUDAExecutor
