"""Targets: one object per device kind, found in a registry, passed through the whole pipeline.

A `Target` says everything the stages need to know about where a program will run: which renderer
and compiler produce its code, which executor runs it, the hardware numbers the lowering and the
schedules are tuned to (SM count, shared memory, tensor-core generations), the thresholds of the
split-reduction pass, and the default schedule and search space of its kernels. No stage compares
device names: each reads what it needs from the Target it is given.

Each backend module (`backends/cpu.py`, `backends/cuda.py`) registers a *kind* ("cpu", "cuda"), a
function that reads a Target from the device present (`detect`), and *presets*: named Targets with
the values of one machine ("h100", "host-cpu"), used where no device is present so that CI renders
and NVRTC-compiles for sm_90 without a GPU. `get_target` turns what a user writes into a Target:

    get_target("cpu")      the host CPU
    get_target("cuda")     the current CUDA GPU (`cuda:1` the second one), its numbers read from the
                           driver; `DeviceError` if there is no driver or GPU
    get_target("h100")     the H100 preset, no device needed (renders and compiles; running needs a GPU)
    get_target(None)       CUDA when a GPU is present, else the CPU

A new backend is one module that builds its Target(s) and calls `register_kind` / `register_preset`,
plus an import of it in `ember/backends/__init__.py` (importing this module runs that file first).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..kernel.split import SplitPolicy
from ..runtime.program import set_target_resolver


class DeviceError(RuntimeError):
    """The requested device cannot be used (no driver, no GPU, an unknown name)."""


@dataclass(frozen=True)
class Target:
    """Where a program runs, and everything the stages read about it (see the module docstring).

    kind: the backend ("cpu", "cuda"), also stored in saved programs; preset: the named machine the
    numbers come from ("h100", "host-cpu"), or "detected" when read from a device; index: the device
    ordinal. Hooks (callables) are set by the backend module that registers the kind."""
    kind: str
    preset: str
    index: int = 0
    arch: str | None = None  # what the compiler is asked for (NVRTC: "sm_90")
    compute_capability: tuple | None = None
    sm_count: int = 1
    smem_per_block: int = 0  # bytes of shared memory one block may opt in to
    smem_per_sm: int = 0
    memory_bytes: int = 0  # device memory (0: unknown / host memory)
    tensor_cores: tuple = ()  # generations usable from generated code ("mma.sync.tf32", "wgmma")
    device_memory: bool = False  # programs keep their buffers on the device (torch CUDA tensors in place)
    # few-row contractions recompute their operand's RMSNorm, its 1 / rms taken out of the product
    # (kernel/recompute.py; off: not yet measured faster)
    fold_norms: bool = False
    split: SplitPolicy = field(default_factory=SplitPolicy)
    tuning: dict = field(default_factory=dict, hash=False, compare=False)  # renderer/schedule constants
    # hooks, set by the backend module
    # (kernels, buffer index, dim index, configs, target) -> (source, configs)
    render_program: Callable | None = field(default=None, repr=False, compare=False)
    render_kernel: Callable | None = field(default=None, repr=False, compare=False)  # (k, cfg, target) -> source
    default_config: Callable | None = field(default=None, repr=False, compare=False)  # (k, target) -> cfg
    search_space: Callable | None = field(default=None, repr=False, compare=False)  # (k, level, target) -> [cfg]
    refine: Callable | None = field(default=None, repr=False, compare=False)  # (cfg) -> mutate(cfg, rng) | None
    executor: Callable | None = field(default=None, repr=False, compare=False)  # (program) -> executor
    compiler: Callable | None = field(default=None, repr=False, compare=False)  # (source, target) -> artifact
    precompile: Callable | None = field(default=None, repr=False, compare=False)  # (k, cfgs, target)
    search_session: Callable | None = field(default=None, repr=False, compare=False)  # (uploads=None) -> context
    identity_of: Callable | None = field(default=None, repr=False, compare=False)  # (target) -> str
    # (kernel, online form) -> whether the renderer streams it in one pass (kernel/online.py)
    online_softmax: Callable | None = field(default=None, repr=False, compare=False)
    # the megakernel (docs/megakernel.md): (k, cfg, target) -> a kernel's schedule as a task; (program, **knobs) -> Program
    task_config: Callable | None = field(default=None, repr=False, compare=False)
    megakernel: Callable | None = field(default=None, repr=False, compare=False)
    present: bool = field(default=False, compare=False)  # read from a device that is here

    @property
    def name(self) -> str:
        return self.kind

    @property
    def runnable(self) -> bool:
        """Whether programs for this target can run here: read from a device that is here, or a
        preset whose kind of device is here (an "h100" program on a machine with a GPU)."""
        return self.present or available(self.kind)

    def identity(self) -> str:
        """What a cached search result is valid for (a GPU's name, a CPU model and compiler)."""
        return self.identity_of(self) if self.identity_of else f"{self.kind}:{self.preset}"

    def replace(self, **changes) -> Target:
        return dataclasses.replace(self, **changes)

    def __str__(self) -> str:
        return self.kind if self.preset == "detected" else f"{self.kind} ({self.preset})"


@dataclass
class _Kind:
    detect: Callable[[int], Target]  # the Target of device `index`; raises DeviceError when absent
    available: Callable[[], bool]
    default_preset: str


_KINDS: dict[str, _Kind] = {}
_PRESETS: dict[str, Target] = {}
_DETECTED: dict = {}
_ORDER: list = []  # kinds in the order get_target(None) prefers them


def register_kind(kind: str, detect: Callable[[int], Target], available: Callable[[], bool],
                  default_preset: str, preferred: bool = False) -> None:
    """Make `kind` (and `kind:N`) a device name. `preferred` kinds come first for the default."""
    _KINDS[kind] = _Kind(detect, available, default_preset)
    if kind in _ORDER:
        _ORDER.remove(kind)
    _ORDER.insert(0 if preferred else len(_ORDER), kind)


def register_preset(name: str, target: Target) -> None:
    _PRESETS[name] = target


def presets() -> dict:
    return dict(_PRESETS)


def kinds() -> list:
    return list(_ORDER)


def preset(name: str) -> Target:
    try:
        return _PRESETS[name]
    except KeyError:
        raise DeviceError(f"unknown target preset {name!r}; known: {sorted(_PRESETS)}") from None


def default_preset(kind: str) -> Target:
    """The preset a kind's code is rendered for where no target is given (the H100 for CUDA)."""
    return preset(_KINDS[kind].default_preset)


def available(kind: str) -> bool:
    """Whether a device of `kind` is here (a driver and a device: CUDA needs both)."""
    return kind in _KINDS and _KINDS[kind].available()


def default_target() -> Target:
    for kind in _ORDER:
        if _KINDS[kind].available():
            return get_target(kind)
    raise DeviceError("no device available")  # pragma: no cover (the CPU always is)


def get_target(device: Any = None) -> Target:
    """A Target for `device`: a Target (returned as is), a kind ("cpu", "cuda", "cuda:1"), a preset
    name ("h100"), or None (the default: CUDA when a GPU is present, else the CPU)."""
    if isinstance(device, Target):
        return device
    if device is None:
        return default_target()
    if not isinstance(device, str):
        raise DeviceError(f"device must be a string or a Target, got {type(device).__name__}")
    d = device.strip().lower()
    if d in _PRESETS:
        return _PRESETS[d]
    kind, _, idx = d.partition(":")
    if kind not in _KINDS or (idx and not idx.isdigit()):
        names = sorted(set(_KINDS) | set(_PRESETS))
        raise DeviceError(f"unknown device {device!r}: use one of {names} (or 'cuda:N')")
    index = int(idx or 0)
    hit = _DETECTED.get((kind, index))
    if hit is None:
        hit = _DETECTED[(kind, index)] = _KINDS[kind].detect(index)
    return hit


def set_target(device: str, target: Target) -> None:
    """Make `get_target(device)` return `target` from now on (benchmarks sweeping a target's values)."""
    kind, _, idx = device.strip().lower().partition(":")
    if kind in _KINDS:
        _DETECTED[(kind, int(idx or 0))] = target
    else:
        _PRESETS[kind] = target


def with_device_values(base: Target, **measured) -> Target:
    """`base` (a preset) with the values read from a device; None values keep the preset's. The
    split-K threshold follows the SM count (fewer tiles than SMs leave SMs idle)."""
    vals = {k: v for k, v in measured.items() if v is not None}
    t = base.replace(preset="detected", present=True, **vals)
    if "sm_count" in vals and vals["sm_count"] != base.sm_count:
        t = t.replace(split=dataclasses.replace(base.split, tiles_few=vals["sm_count"]))
    return t


set_target_resolver(get_target)  # Program.load finds its target (and so its executor) here
