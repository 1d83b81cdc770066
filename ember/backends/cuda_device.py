"""The CUDA device as the executor sees it: the cuda.core Device made current per thread, and the
per-kernel attributes (dynamic shared memory, cluster sizes) a launch opts in to."""
from __future__ import annotations

import functools
import threading


def _check(result, what: str):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"CUDA error {err} in {what}")
    return result[1:] if isinstance(result, tuple) and len(result) > 1 else None


_THREAD = threading.local()


def device(index: int = 0):
    """The cuda.core Device, its context made current in the calling thread (a server's engine and
    its startup run in threads of their own: without this, creating a stream there fails)."""
    dev = _device(int(index))
    done = getattr(_THREAD, "current", None)
    if done is None:
        done = _THREAD.current = set()
    if index not in done:
        dev.set_current()
        done.add(index)
    return dev


@functools.lru_cache(maxsize=None)
def _device(index: int):  # one cache entry per GPU, whether called as device() or device(0)
    from cuda.core import Device
    dev = Device(index)
    dev.set_current()
    return dev


def device_arch(index: int = 0) -> str:
    return f"sm_{device(index).arch}"


def set_max_dynamic_smem(kernel, nbytes: int, dev=None) -> None:
    """Allow a kernel more than 48 KB of dynamic shared memory (opt-in, per kernel)."""
    from cuda.bindings import driver
    set_kernel_attribute(kernel, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                         nbytes, dev)


def allow_large_clusters(kernel, dev=None) -> None:
    """Allow clusters of more than 8 blocks (16 on the H100: non-portable, opt-in per kernel)."""
    from cuda.bindings import driver
    set_kernel_attribute(kernel, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                         1, dev)


def set_kernel_attribute(kernel, attr, value: int, dev=None) -> None:
    from cuda.bindings import driver
    nbytes = value
    h = kernel.handle
    if isinstance(h, driver.CUkernel):
        _check(driver.cuKernelSetAttribute(attr, nbytes, h, (dev or device()).device_id), "cuKernelSetAttribute")
    else:
        _check(driver.cuFuncSetAttribute(h, attr, nbytes), "cuFuncSetAttribute")


_MODULES: dict = {}  # cubin sha -> loaded ObjectCode (kernels shared across programs)


def load_kernel(cubin: bytes, name: str, symbol: str | None = None):
    """Kernel `symbol` of the module `cubin` (one module per distinct cubin), or `name` where the
    module has no such symbol (a program exported before kernels were compiled under one symbol)."""
    import hashlib

    from cuda.core import ObjectCode
    key = hashlib.sha256(cubin).hexdigest()
    mod = _MODULES.get(key)
    if mod is None:
        mod = _MODULES[key] = ObjectCode.from_cubin(cubin)
    if symbol is not None and symbol.encode() in cubin:
        return mod.get_kernel(symbol)
    return mod.get_kernel(name)
