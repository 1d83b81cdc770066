"""Compiled programs: the runnable artifact `em.compile` returns.

A `Program` holds no graph: only what running needs — the generated source, one launch per kernel
(function name, buffer arguments, dimension arguments and, on the GPU, launch geometry), the buffer
table (dtype and symbolic shape of every input, output, constant and temporary) and the constant
arrays. That is also what `save` writes, so a loaded program runs without the graph or the search.

Named dimensions are bound on every call from the input shapes; memory plans are cached per binding,
so a new batch size re-plans memory but never recompiles.
"""
from __future__ import annotations

import io
import json
import time
import zipfile
from dataclasses import dataclass, field

import numpy as np

from .. import dtypes as dt
from .. import symbolic as sm
from ..arrays import InputError, InputSpec, bind_dims, check_inputs
from .memory import Plan, plan_memory

FORMAT = "ember-program"
VERSION = 1

_resolve_target = None  # device name -> Target; set by ember/backends/target.py (the runtime imports no backend)


def set_target_resolver(fn) -> None:
    global _resolve_target
    _resolve_target = fn


@dataclass
class BufferSpec:
    name: str
    dtype: dt.DType
    shape: tuple
    kind: str  # input | data | temp | output

    @property
    def size(self):
        return sm.prod(self.shape)


@dataclass
class Launch:
    kernel: str  # function name in the source
    args: list  # program buffer names, in parameter order
    dims: list  # dimension names, in parameter order
    stats: dict = field(default_factory=dict)  # bytes / flops as symbolic expressions (JSON form)
    config: dict = field(default_factory=dict)  # backend-specific (GPU grid/block as JSON exprs)
    writes: list | None = None  # the args it stores to (None: unknown, every arg counts as written)

    @property
    def collective(self) -> str | None:
        """A collective step's op ("all_reduce/2"; args: [source, destination]), None for a kernel."""
        return self.config.get("collective")


def _json_shape(shape) -> list:
    return [sm.to_json(s) for s in shape]


def _from_json_shape(j) -> tuple:
    return tuple(sm.from_json(s) for s in j)


class Program:
    """Callable compiled program. ``fn(**inputs)`` -> numpy array (or a tuple / dict of them)."""

    def __init__(self, device: str, source: str, launches: list, buffers: dict, outputs: list,
                 inputs: list, dims: list, data: dict, output_names=None, output_kind: str = "single",
                 meta: dict | None = None, target=None):
        self.device = device  # the target's kind ("cpu", "cuda"): what a saved program records
        self.target = target  # the Target it was rendered for (its executor runs it)
        self.source = source
        self.launches = launches
        self.buffers = buffers
        self.outputs = outputs
        self.inputs = inputs
        self.dims = dims
        self.data = data
        self.output_names = output_names
        self.output_kind = output_kind
        self.meta = meta or {}
        self.input_specs = [InputSpec(n, buffers[f"in_{n}"].dtype, buffers[f"in_{n}"].shape) for n in inputs]
        self._plans: dict = {}
        self._shapes: dict = {}
        self._shape_dims: dict = {}
        self._write_memo: dict = {}  # state -> parsed (start, extent) of its write
        self._timings: list | None = None
        self._last_env: dict | None = None
        self._executor = None
        self.from_cache = False  # loaded by em.compile(..., cache=True) from the on-disk program cache
        self.prebuilt: dict | None = None  # an export's built kernels (ember/export.py), used by the executor
        # CUDA, torch tensors in: n > 0 returns one of n output sets kept by the executor, reused every
        # n calls, so a caller feeding outputs back as inputs (a training step) repeats its pointers
        # and replays its graph; such outputs are valid for n - 1 further calls (backends/cuda.py)
        self.output_ring = 0

    @property
    def executor(self):
        """The target's executor, made on first use (compiles and loads the code): a program rendered
        for a preset without its device can still be saved, and fails with a DeviceError if run."""
        if self._executor is None and self.target is not None:
            self._executor = self.target.executor(self)
        return self._executor

    @executor.setter
    def executor(self, ex) -> None:
        self._executor = ex

    @property
    def cast_inputs(self) -> bool:
        """Whether a call converts float inputs wider than the program's (float64 into a float32
        program) instead of refusing them; set by em.compile(..., cast_inputs=True), saved with
        the program."""
        return bool(self.meta.get("cast_inputs", False))

    @cast_inputs.setter
    def cast_inputs(self, on: bool) -> None:
        self.meta["cast_inputs"] = bool(on)

    @property
    def dim_bounds(self) -> dict:
        """Upper bounds of named dims (em.compile(..., dim_bounds=)): memory is planned once at the
        bounds, so every binding within them uses the same buffers (and, on the GPU, one CUDA graph
        whose dim-reading kernels are updated per call)."""
        return self.meta.get("dim_bounds") or {}

    def memory_env(self, env: dict) -> dict:
        """The binding that sizes memory: bounded dims at their bounds."""
        b = self.dim_bounds
        return {**env, **b} if b else env

    def binding_key(self, env: dict) -> tuple:
        """One key per memory plan (bounded dims share one)."""
        b = self.dim_bounds
        return tuple(b.get(d, env[d]) for d in self.dims) if b else tuple(env[d] for d in self.dims)

    @property
    def state_inputs(self) -> list:
        """Inputs the program writes in place (em.state_write): a KV cache's new rows land there."""
        return [w["state"] for w in self.meta.get("writes", ())]

    # ------------------------------------------------------------------ running
    def _bind(self, given: dict, dims: dict | None = None) -> tuple[dict, dict]:
        arrays = check_inputs(self.input_specs, given, keep_device=self._on_device(),
                              narrow_floats=self.cast_inputs)
        bound = {}
        for d, v in (dims or {}).items():
            if d not in self.dims:
                raise InputError(f"dims: {d!r} is not a dimension of this program (it has {self.dims or 'none'})")
            if not isinstance(v, (int, np.integer)) or v < 0:
                raise InputError(f"dims: {d!r} must be a non-negative int, got {v!r}")
            bound[d] = int(v)
        env = bind_dims(self.input_specs, arrays, bound)
        missing = [d for d in self.dims if d not in env]
        if missing:
            raise InputError(f"dimension(s) {missing} are not fixed by the inputs (pass them: "
                             f"program.run(inputs, dims={{...}}))")
        for d, hi in self.dim_bounds.items():
            if env.get(d, 0) > hi:
                raise InputError(f"dimension {d!r} = {env[d]} exceeds its bound {hi} (compiled with dim_bounds)")
        if self.meta.get("writes"):
            self._check_writes(given, arrays, env)
        return arrays, env

    def _check_writes(self, given: dict, arrays: dict, env: dict) -> None:
        """Every state write lands inside its state, in the caller's own array (updated in place)."""
        from ..arrays import DeviceArray
        on_device = any(isinstance(a, DeviceArray) for a in arrays.values())
        for w in self.meta["writes"]:
            name, axis = w["state"], w["axis"]
            a = arrays[name]
            if not isinstance(a, DeviceArray) and not (a is given[name] and a.flags.c_contiguous and a.flags.writeable):
                raise InputError(f"state input {name!r} is written in place: pass a writeable C-contiguous array "
                                 f"of dtype {self.buffers['in_' + name].dtype.name} (or a device array), not a copy")
            if on_device and not isinstance(a, DeviceArray):
                raise InputError(f"state input {name!r} is a host array while other inputs are device arrays: "
                                 "pass the state on the device too (it is written in place)")
            start_e, extent_e = self._write_exprs(w)
            start = _value(start_e, env)
            stop = start + _value(extent_e, env)
            if start < 0 or stop > a.shape[axis]:
                raise InputError(f"state input {name!r}: the write covers [{start}, {stop}) along axis {axis}, "
                                 f"outside its extent {a.shape[axis]}")

    def _write_exprs(self, w: dict) -> tuple:
        """A write's (start, extent) expressions, parsed once (this is on every decode step's path)."""
        hit = self._write_memo.get(w["state"])
        if hit is None:
            hit = self._write_memo[w["state"]] = (sm.from_json(w["start"]), sm.from_json(w["extent"]))
        return hit

    def run(self, inputs: dict, dims: dict | None = None):
        """Like calling the program, with named dimensions that no input shape fixes given in `dims`
        (a KV cache's filled length)."""
        arrays, env = self._bind(inputs, dims)
        outs = self.executor.run(self, arrays, env)
        self._last_env = env
        return self._pack(outs)

    def _on_device(self) -> bool:
        return bool(self.target is not None and self.target.device_memory)

    def plan(self, env: dict) -> Plan:
        key = self.binding_key(env)
        p = self._plans.get(key)
        if p is None:
            env = self.memory_env(env)
            temps = {b.name for b in self.buffers.values() if b.kind == "temp"}
            sizes = {n: int(sm.evaluate(self.buffers[n].size, env)) * self.buffers[n].dtype.itemsize for n in temps}
            p = plan_memory(sizes, self._lifetimes(temps))
            self._plans[key] = p
        return p

    def _lifetimes(self, temps: set) -> dict:
        life: dict = {}
        for i, l in enumerate(self.launches):
            for b in l.args:
                if b in temps:
                    f, e = life.get(b, (i, i))
                    life[b] = (min(f, i), max(e, i))
        for t in temps:
            life.setdefault(t, (0, 0))
        return life

    def shape_of(self, name: str, env: dict) -> tuple:
        """Concrete shape of a buffer under a dims binding (memoised: this is on every call's path)."""
        used = self._shape_dims.get(name)
        if used is None:  # (keyed by the dims this buffer's shape uses: a cache's does not change with P)
            used = self._shape_dims[name] = tuple(sorted(set().union(*(sm.free_vars(s) for s in self.buffers[name].shape))))
        key = (name, tuple(env.get(d) for d in used))
        hit = self._shapes.get(key)
        if hit is None:
            hit = self._shapes[key] = tuple(int(sm.evaluate(s, env)) for s in self.buffers[name].shape)
        return hit

    def __call__(self, *args, **inputs):
        if args:
            if len(args) == 1 and isinstance(args[0], dict) and not inputs:
                inputs = dict(args[0])
            else:
                raise TypeError("pass inputs by name: fn(x=array, ...)")
        return self.run(inputs)

    def call_checked(self, feed: dict):
        """Like calling the program, for callers that already checked input names, shapes and dtypes
        (the PyTorch frontend): contiguous torch.cuda tensors of a static-shape CUDA program go
        straight to the executor's torch path — the per-call host cost is then mostly torch's own
        output allocation and one launch (a graph launch for several kernels)."""
        if not self._on_device() or self.dims or self.meta.get("writes"):
            return self(**feed)
        self._last_env = {}
        ins = tuple(feed[n] for n in self.inputs)
        return self._pack(self.executor.run_torch(self, tuple(t.data_ptr() for t in ins), {}, ins))

    def _pack(self, outs: list):
        if self.output_kind == "single":
            return outs[0]
        if self.output_kind == "dict":
            return dict(zip(self.output_names, outs))
        return tuple(outs)

    # ------------------------------------------------------------------ reporting
    def profile(self, reps: int = 20, dims: dict | None = None, **inputs) -> list:
        """Time every kernel (median of `reps` runs, after a warm-up) on these inputs (`dims`: named
        dimensions no input fixes, as in `run`)."""
        arrays, env = self._bind(inputs, dims)
        self._timings = self.executor.time_kernels(self, arrays, env, reps)
        self._last_env = env
        return self._timings

    def trace(self, path=None, dims: dict | None = None, **inputs) -> dict:
        """Run every launch once, in order, timing each on the device (after a warm-up run); write a
        Chrome/Perfetto trace to `path` if given (runtime/trace.py) and return the sums: kernel and
        collective time (us) of the step. Every rank of a sharded program must call it together."""
        from ..comm import current
        from .trace import summarize, write_trace
        arrays, env = self._bind(inputs, dims)
        self._last_env = env
        spans = self.executor.trace(self, arrays, env)
        if path is not None:
            write_trace(path, self, spans, current().rank)
        return summarize(self, spans)

    def benchmark(self, reps: int = 30, dims: dict | None = None, **inputs) -> float:
        """Median time (us) of running the whole program on these inputs (on the GPU: one CUDA graph
        replay with inputs already on the device)."""
        arrays, env = self._bind(inputs, dims)
        self._last_env = env
        return self.executor.time_program(self, arrays, env, reps)

    def stats(self, env: dict | None = None) -> list:
        env = env or self._last_env or {}
        out = []
        for l in self.launches:
            b = l.stats.get("bytes")
            f = l.stats.get("flops")
            try:
                nb = int(sm.evaluate(sm.from_json(b), env)) if b is not None else None
                nf = int(sm.evaluate(sm.from_json(f), env)) if f is not None else None
            except KeyError:
                nb = nf = None
            out.append((nb, nf))
        return out

    def report(self) -> str:
        """Kernels, time each (after `profile` or a call), bytes moved and achieved rate, peak memory."""
        env = self._last_env
        lines = [f"Ember program on {self.device}: {len(self.launches)} kernel(s), "
                 f"inputs {self.inputs}, dims {self.dims or 'static'}"]
        if self.meta.get("search"):
            lines.append(f"search: {self.meta['search']}")
        if env is not None and self._timings is None:
            lines.append("(call fn.profile(**inputs) for per-kernel times)")
        stats = self.stats(env) if env is not None else [(None, None)] * len(self.launches)
        hdr = f"{'#':>3}  {'kernel':<28} {'time us':>10} {'bytes':>12} {'GB/s':>8} {'GFLOP/s':>9}"
        lines.append(hdr)
        total = 0.0
        for i, l in enumerate(self.launches):
            t = self._timings[i] if self._timings else None
            nb, nf = stats[i]
            gbs = f"{nb / t / 1e3:8.1f}" if (t and nb) else f"{'':8}"
            gfl = f"{nf / t / 1e3:9.2f}" if (t and nf) else f"{'':9}"
            ts = f"{t:10.1f}" if t is not None else f"{'-':>10}"
            bs = f"{nb:12d}" if nb is not None else f"{'-':>12}"
            lines.append(f"{i:>3}  {l.kernel[:28]:<28} {ts} {bs} {gbs} {gfl}")
            total += t or 0.0
        if self._timings:
            lines.append(f"total kernel time {total:.1f} us")
        if env is not None:
            lines.append("memory: " + self.plan(env).describe())
        return "\n".join(lines)

    # ------------------------------------------------------------------ save / load
    def to_plan(self) -> dict:
        """Everything but the constant arrays, as JSON-able data (what `from_plan` reads)."""
        return {
            "format": FORMAT, "version": VERSION, "device": self.device, "source": self.source,
            "launches": [{"kernel": l.kernel, "args": l.args, "dims": l.dims, "stats": l.stats, "config": l.config,
                          "writes": l.writes} for l in self.launches],
            "buffers": [{"name": b.name, "dtype": b.dtype.name, "shape": _json_shape(b.shape), "kind": b.kind}
                        for b in self.buffers.values()],
            "outputs": self.outputs, "inputs": self.inputs, "dims": self.dims,
            "output_names": self.output_names, "output_kind": self.output_kind, "meta": self.meta,
        }

    def to_bytes(self) -> bytes:
        bio = io.BytesIO()
        with zipfile.ZipFile(bio, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("program.json", json.dumps(self.to_plan()))
            for name, arr in self.data.items():
                raw = io.BytesIO()
                np.save(raw, arr.view(np.uint16) if arr.dtype.name == "bfloat16" else arr, allow_pickle=False)
                z.writestr(f"data/{name}.npy", raw.getvalue())
        return bio.getvalue()

    def save(self, path) -> None:
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    @staticmethod
    def load(path, device: str | None = None) -> "Program":
        with open(path, "rb") as f:
            payload = f.read()
        try:
            return Program.from_bytes(payload, device)
        except zipfile.BadZipFile:
            raise ValueError(f"{path} is not an Ember program") from None

    @staticmethod
    def from_bytes(payload: bytes, device=None, data_optional: bool = False) -> "Program":
        """A program from `to_bytes`' payload, for `device` (a name or a Target; default: the one it
        was made for). data_optional: constants absent from the payload are left for the caller
        (ember/runtime/program_cache.py fills them from the graph)."""
        with zipfile.ZipFile(io.BytesIO(payload)) as z:
            meta = json.loads(z.read("program.json"))
            stored = set(z.namelist())
            data = {b["name"]: np.load(io.BytesIO(z.read(f"data/{b['name']}.npy")), allow_pickle=False)
                    for b in meta.get("buffers", ()) if b["kind"] == "data"
                    and (f"data/{b['name']}.npy" in stored or not data_optional)}
        return Program.from_plan(meta, device, data, load_now=not data_optional)

    @staticmethod
    def from_plan(meta: dict, device=None, data: dict | None = None, load_now: bool = True) -> "Program":
        """A program from `to_plan`'s data and its constant arrays (bfloat16 ones may come as uint16)."""
        if meta.get("format") != FORMAT:
            raise ValueError("not an Ember program")
        buffers = {}
        for b in meta["buffers"]:
            buffers[b["name"]] = BufferSpec(b["name"], dt.as_dtype(b["dtype"]), _from_json_shape(b["shape"]), b["kind"])
        data = {n: a.view(buffers[n].dtype.np) if buffers[n].dtype == dt.bfloat16 else a for n, a in (data or {}).items()}
        launches = [Launch(l["kernel"], l["args"], l["dims"], l.get("stats", {}), l.get("config", {}), l.get("writes"))
                    for l in meta["launches"]]
        target = device if device is not None and not isinstance(device, str) else _resolve_target(device or meta["device"])
        p = Program(target.kind, meta["source"], launches, buffers, meta["outputs"], meta["inputs"],
                    meta["dims"], data, meta["output_names"], meta["output_kind"], meta.get("meta"), target)
        if target.runnable and load_now:
            p.executor  # noqa: B018 - compiled and loaded now (errors surface at load)
        return p


def timed(fn, reps: int) -> float:
    """Median wall time of fn() in microseconds (host clock; CPU work is synchronous)."""
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e6)
    ts.sort()
    return ts[len(ts) // 2]


def _value(e, env: dict) -> int:
    """sm.evaluate, with the decode step's cases (a constant, a bare dim) taken without a walk."""
    if e.is_const:
        return int(e.value)
    if e.op == "var":
        return int(env[e.args[0]])
    return int(sm.evaluate(e, env))
