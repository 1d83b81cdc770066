"""CPU device: gcc -> shared library -> ctypes.

Measured pitfalls this file handles (research/deps.md §4): compiled libraries are cached on disk by
sha256(source, flags, compiler, CPU) and published atomically with a checksum verified before dlopen
(ember/cache.py; a unique path per hash, since dlopen returns an already-loaded library for a path it
has open); libgomp is loaded once with RTLD_GLOBAL so OpenMP libraries can be unloaded safely; ctypes
calls take pre-computed integer pointers.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import subprocess
import tempfile
import threading

from .. import cache

BASE_CFLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=gnu11", "-fno-math-errno")


@functools.lru_cache(maxsize=None)
def _libmvec() -> bool:
    """Whether glibc's libmvec links here (glibc >= 2.35 for exp2f/log2f vector variants)."""
    import ctypes.util
    if not ctypes.util.find_library("mvec"):
        return False
    try:
        d = tempfile.mkdtemp()
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write("#pragma omp declare simd notinbranch\nfloat exp2f(float);\n"
                    "void t(float* o, const float* a, long n) { for (long i = 0; i < n; i++) o[i] = exp2f(a[i]); }\n")
        r = subprocess.run(["gcc", *BASE_CFLAGS, src, "-o", os.path.join(d, "t.so"), "-lm", "-lmvec"],
                           capture_output=True)
        return r.returncode == 0
    except OSError:
        return False


def cflags() -> tuple:
    return BASE_CFLAGS + (("-DEM_LIBMVEC",) if _libmvec() else ())


CFLAGS = BASE_CFLAGS


class CompileError(RuntimeError):
    """Generated source failed to compile; the message names the saved source file."""


@functools.lru_cache(maxsize=None)
def compiler_identity(cc: str = "gcc") -> str:
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError) as e:
        raise CompileError(f"no working C compiler {cc!r} ({e}); the CPU backend needs gcc") from None


@functools.lru_cache(maxsize=None)
def has_avx512_bf16() -> bool:
    """Whether this CPU has AVX-512 BF16 (vdpbf16ps: the packed GEMM's bfloat16 micro-kernel)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512_bf16" in line for line in f)
    except OSError:
        return False


@functools.lru_cache(maxsize=None)
def has_avx512() -> bool:
    """Whether this CPU has AVX-512F (the packed GEMM form's 16-float vectors fit one register)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512f" in line for line in f)
    except OSError:
        return False


@functools.lru_cache(maxsize=None)
def cpu_identity() -> str:
    """Model and feature flags: -march=native code must not be reused on a different CPU."""
    model, flags = "", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and not model:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1].strip()
                if model and flags:
                    break
    except OSError:
        import platform
        model = platform.processor() or platform.machine()
    return model + "|" + hashlib.sha256(flags.encode()).hexdigest()[:16]


_GOMP = None


def _preload_gomp() -> None:
    global _GOMP
    if _GOMP is None:
        try:
            _GOMP = ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL)
        except OSError:
            _GOMP = False


def _library_key(source: str, flags, cc: str) -> str:
    return hashlib.sha256("\0".join([source, " ".join(flags), compiler_identity(cc), cpu_identity()]).encode()).hexdigest()[:32]


def compile_c(source: str, flags=None, cc: str = "gcc") -> str:
    """Path of a shared library built from `source` (from the cache when it exists)."""
    flags = cflags() if flags is None else flags
    key = _library_key(source, flags, cc)
    d = cache.cache_dir("cpu")
    so = os.path.join(d, f"lib_{key}.so")
    if cache.verify(so):  # checked before dlopen: a truncated library would SIGBUS on first touch
        return so
    fd, src_path = tempfile.mkstemp(suffix=".c", dir=d)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    tmp = f"{so}.{os.getpid()}.{threading.get_ident()}.tmp"
    libs = ["-lm"] + (["-lmvec"] if "-DEM_LIBMVEC" in flags else [])
    r = subprocess.run([cc, *flags, src_path, "-o", tmp, *libs], capture_output=True, text=True)
    if r.returncode != 0:
        keep = os.path.join(d, f"failed_{key}.c")
        os.replace(src_path, keep)
        msg = "\n".join(r.stderr.splitlines()[:30])
        raise CompileError(f"gcc failed on generated C (source saved to {keep}):\n{msg}")
    cache.publish(tmp, so)
    os.unlink(src_path)
    return so


def _prebuilt_library(program) -> str | None:
    """An export's shared library (ember/runtime/export.py), used when it was built by this
    compiler for this CPU (a library built with another CPU's flags could fault): its path in the cache."""
    built = (getattr(program, "prebuilt", None) or {}).get("cpu")
    if not built or built.get("identity") != f"{cpu_identity()}|{compiler_identity()}" or built.get("flags") != list(cflags()):
        return None
    so = os.path.join(cache.cache_dir("cpu"), f"lib_{_library_key(program.source, cflags(), 'gcc')}.so")
    if not cache.verify(so):
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(so), prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(built["so"])
        cache.publish(tmp, so)
    return so


def built_library(source: str) -> dict:
    """What an export keeps of a program's C: the shared library and what it was built for."""
    payload = cache.load(compile_c(source))  # (without the cache's checksum trailer)
    return {"so": payload, "identity": f"{cpu_identity()}|{compiler_identity()}", "flags": list(cflags())}


def load_library(path: str) -> ctypes.CDLL:
    _preload_gomp()
    return ctypes.CDLL(path)


# ------------------------------------------------------------------------------------------------
# executing programs

class CPUExecutor:
    """Runs a Program's kernels in-process through one ctypes call per run."""

    overlap = True  # collectives run while independent kernels compute (see _run_steps)

    def __init__(self, program):
        self.lib = load_library(_prebuilt_library(program) or compile_c(program.source))
        self.entry = self.lib.ember_program
        self.entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.entry.restype = None
        # two slots per launch for what a kernel keeps between calls (its packed constant weights)
        self._ncache = 2 * max(len(program.launches), 1)
        self._caches = (ctypes.c_void_p * self._ncache)()
        self._free = self.lib.ember_free_caches
        self._free.argtypes = [ctypes.c_void_p, ctypes.c_longlong]
        self._free.restype = None
        self.kernels = []  # one per kernel launch (collective steps have none)
        for i in range(sum(1 for l in program.launches if not l.collective)):
            f = getattr(self.lib, f"ember_k{i}")
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            f.restype = None
            self.kernels.append(lambda parr, dp, f=f: f(parr, dp, self._caches))
        self._arena = None
        self.poison = False

    def __del__(self):
        free, caches = getattr(self, "_free", None), getattr(self, "_caches", None)
        if free is not None and caches is not None:
            free(caches, self._ncache)

    def _call(self, parr, dp) -> None:
        self.entry(parr, dp, self._caches)

    def _arena_ptr(self, nbytes: int) -> int:
        import numpy as np
        if self._arena is None or self._arena.nbytes < nbytes + 64:
            self._arena = np.empty(nbytes + 64, np.uint8)
        base = self._arena.ctypes.data
        return base + (-base % 64)

    def _setup(self, program, arrays: dict, env: dict):
        import numpy as np
        plan = program.plan(env)
        arena = self._arena_ptr(plan.arena_bytes)
        outs, keep, ptrs = {}, [], []
        for name, b in program.buffers.items():
            if b.kind == "input":
                a = np.ascontiguousarray(arrays[name[3:]])
                keep.append(a)
                ptrs.append(a.ctypes.data)
            elif b.kind == "data":
                ptrs.append(program.data[name].ctypes.data)
            elif b.kind == "temp":
                ptrs.append(arena + plan.offsets[name])
            else:
                o = np.empty(program.shape_of(name, env), b.dtype.np)
                if self.poison:
                    o.reshape(-1).view(np.uint8).fill(0xFF)  # NaN for floats, -1 for ints (reshape: 0-d too)
                outs[name] = o
                ptrs.append(o.ctypes.data)
        parr = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
        dims = np.array([env[d] for d in program.dims] or [0], np.int64)
        self._where = dict(zip(program.buffers, ptrs))
        return parr, dims, outs, keep

    def run(self, program, arrays: dict, env: dict) -> list:
        parr, dims, outs, keep = self._setup(program, arrays, env)
        if any(l.collective for l in program.launches):
            self._run_steps(program, parr, dims.ctypes.data, env)
        else:
            self._call(parr, dims.ctypes.data)
        return [outs[o] for o in program.outputs]

    def _run_steps(self, program, parr, dp, env: dict) -> None:
        """The kernels one by one, the collectives between them through the process's communicator
        (ember/comm.py: gloo under ember.distributed). With `overlap`, a collective runs on gloo's
        threads while the kernels after it compute, until a launch touches its source's or
        destination's memory (read, write, or the arena reusing it)."""
        kernels = iter(self.kernels)
        ranges = self._ranges(program, env)
        pending: list = []  # (byte ranges, handle) of collectives in flight
        for i, l in enumerate(program.launches):
            if pending:
                still = []
                for held, h in pending:
                    if any(a < d and c < b for a, b in held for c, d in ranges[i]):
                        h.wait()
                    else:
                        still.append((held, h))
                pending = still
            if l.collective:
                h = self._collective(program, l, env)
                if self.overlap:
                    pending.append((ranges[i], h))
                else:
                    h.wait()
            else:
                next(kernels)(parr, dp)
        for _, h in pending:
            h.wait()

    def _ranges(self, program, env: dict) -> list:
        """Per launch, the [start, end) byte ranges of the buffers it names."""
        import numpy as np

        def extent(name):
            b = program.buffers[name]
            n = int(np.prod(program.shape_of(name, env))) * b.dtype.itemsize
            return self._where[name], self._where[name] + max(n, 1)
        return [[extent(a) for a in l.args] for l in program.launches]

    def _collective(self, program, l, env: dict):
        """Start collective launch l (a handle to wait on)."""
        from ..comm import require
        from ..primitives.collective import parse
        op = parse(l.collective)
        src, dst = (self._array(program, n, env) for n in l.args)
        return require(op.world).start(op.kind, src, dst)

    def _array(self, program, name: str, env: dict):
        import numpy as np
        b = program.buffers[name]
        shape = program.shape_of(name, env)
        n = int(np.prod(shape)) * b.dtype.itemsize
        raw = np.ctypeslib.as_array((ctypes.c_uint8 * max(n, 1)).from_address(self._where[name]))[:n]
        return raw.view(b.dtype.np).reshape(shape)

    def trace(self, program, arrays: dict, env: dict) -> list:
        """[(launch index, start us, duration us)] of one step run launch by launch (after a warm-up)."""
        import time
        parr, dims, outs, keep = self._setup(program, arrays, env)
        dp = dims.ctypes.data
        for _ in range(2):  # (the first calls also pay the library's lazy symbol binding)
            self._run_steps(program, parr, dp, env)
        spans, kernels, t0 = [], iter(self.kernels), time.perf_counter()
        for i, l in enumerate(program.launches):
            a = time.perf_counter()
            if l.collective:
                self._collective(program, l, env).wait()
            else:
                next(kernels)(parr, dp)
            b = time.perf_counter()
            spans.append((i, (a - t0) * 1e6, (b - a) * 1e6))
        return spans

    def time_kernels(self, program, arrays: dict, env: dict, reps: int) -> list:
        from ..runtime.program import timed
        parr, dims, outs, keep = self._setup(program, arrays, env)
        dp = dims.ctypes.data
        self._call(parr, dp)  # warm-up (thread pool, caches, packed weights)
        return [timed(lambda f=f: f(parr, dp), reps) for f in self.kernels]

    def time_kernel(self, program, arrays: dict, env: dict, index: int, reps: int, limit_us: float | None = None) -> float:
        from ..runtime.program import timed
        parr, dims, outs, keep = self._setup(program, arrays, env)
        dp = dims.ctypes.data
        self._call(parr, dp)
        f = self.kernels[index]
        first = timed(lambda: f(parr, dp), 1)
        if limit_us is not None and first > limit_us:
            return float("inf")
        return timed(lambda: f(parr, dp), reps)

    def time_program(self, program, arrays: dict, env: dict, reps: int) -> float:
        from ..runtime.program import timed
        parr, dims, outs, keep = self._setup(program, arrays, env)
        dp = dims.ctypes.data
        self._call(parr, dp)
        return timed(lambda: self._call(parr, dp), reps)
