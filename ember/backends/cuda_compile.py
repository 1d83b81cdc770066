"""NVRTC: generated CUDA C -> cubin, cached on disk by source hash; a program's kernels compiled as
modules of their own, once per distinct body."""
from __future__ import annotations

import functools
import hashlib
import os
import re

from .. import cache
from .cpu import CompileError


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> str:
    from cuda.bindings import nvrtc
    err, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def compile_cuda(source: str, arch: str = "sm_90a") -> bytes:
    """cubin for `source` (cached on disk by sha256 of source, arch and NVRTC version)."""
    lineinfo = os.environ.get("EMBER_NVRTC_LINEINFO") == "1"  # source lines in sanitizer and profiler reports
    parts = [source, arch, nvrtc_version(), "std=c++17"] + (["lineinfo"] if lineinfo else [])
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
    d = cache.cache_dir("cuda")
    path = os.path.join(d, f"{key}.cubin")
    cached = cache.load(path)  # None when absent or damaged (then deleted, reported, rebuilt here)
    if cached is not None:
        return cached
    from cuda.core import Program, ProgramOptions
    try:
        obj = Program(source, code_type="c++", options=ProgramOptions(arch=arch, std="c++17", lineinfo=lineinfo)).compile("cubin")
    except Exception as e:  # NVRTCError: keep the source for the bug report
        keep = os.path.join(d, f"failed_{key}.cu")
        with open(keep, "w") as f:
            f.write(source)
        raise CompileError(f"NVRTC failed on generated CUDA (source saved to {keep}):\n{str(e)[:3000]}") from None
    cubin = bytes(obj.code)
    cache.store(path, cubin)
    return cubin


def ptxas_report(source: str, arch: str = "sm_90a") -> str:
    """The assembler's own report on `source` (ptxas -v through NVRTC: registers, spills, and its performance
    warnings — "wgmma.mma_async instructions are serialized ..." where it could not prove a wgmma's registers
    safe to overlap); not cached, for tests and surveys."""
    import io

    from cuda.core import Program, ProgramOptions
    log = io.StringIO()
    options = ProgramOptions(arch=arch, std="c++17", ptxas_options="-v")
    Program(source, code_type="c++", options=options).compile("cubin", logs=log)
    return log.getvalue()


def wgmma_serialized(report: str) -> list:
    """The functions ptxas_report says run their wgmmas serialized."""
    return re.findall(r"wgmma\.mma_async instructions are serialized[^']*'(\w+)'", report)


KERNEL_SYMBOL = "ember_kernel"  # every kernel's symbol in the modules compile_kernels makes


def keep_kernel_names() -> bool:
    """EMBER_KEEP_KERNEL_NAMES=1: each kernel keeps its own name in its module (k7_where, not
    KERNEL_SYMBOL) and bodies alike but for the name are compiled once each: for a profiler (ncu's
    --kernel-name, a CUPTI trace) to tell the kernels apart. Off by default (the shared modules)."""
    return os.environ.get("EMBER_KEEP_KERNEL_NAMES", "0") == "1"


def kernel_symbol(name: str) -> str:
    """The symbol kernel `name` has in the module compile_kernels made for it."""
    return name if keep_kernel_names() else KERNEL_SYMBOL


def compile_kernels(source: str, arch: str) -> dict:
    """{kernel name: cubin}: each kernel of a program compiled (and cached) as its own module, in
    parallel threads (NVRTC releases the GIL), its symbol renamed KERNEL_SYMBOL (kernel_symbol)."""
    from concurrent.futures import ThreadPoolExecutor

    import cuda.core  # noqa: F401  (import once here: concurrent first imports in threads race)

    from ..codegen.cuda import split_program
    prelude, kernels = split_program(source)
    if not kernels:
        return {None: compile_cuda(source, arch)}
    # Kernels that differ only in their names (an unrolled recurrence's steps: the same code over
    # other buffers) are one module: each is compiled under one symbol, once per distinct body.
    bodies = {n: re.sub(rf"\b{re.escape(n)}\b", kernel_symbol(n), b) for n, b in kernels.items()}
    unique = list(dict.fromkeys(bodies.values()))
    with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 2, len(unique))) as pool:
        cubins = dict(zip(unique, pool.map(lambda b: compile_cuda(prelude + "\n" + b, arch), unique)))
    return {n: cubins[b] for n, b in bodies.items()}
