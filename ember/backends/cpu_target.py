"""The CPU target: C with OpenMP, compiled by gcc, run through ctypes (backends/cpu.py)."""
from __future__ import annotations

import os

from .target import SplitPolicy, Target, register_kind, register_preset


def _render_program(kernels, buffer_index, dim_index, configs, target, constants=frozenset()):
    from ..codegen.c import render_program
    # without a search, each kernel gets the target's default (which knows the CPU's vector width)
    chosen = configs or [_default_config(k, target) for k, _ in kernels]
    chosen = _with_prepack(kernels, chosen, constants)
    source = render_program(kernels, buffer_index, dim_index, configs=chosen)
    return source, [{"cfg": c} if c else {} for c in (configs or [None] * len(kernels))]


def _with_prepack(kernels, configs: list, constants) -> list:
    """Packed GEMMs whose weights are the program's constants pack them once per program (cfg
    `prepack`), where every launch of that kernel reads constants on the same side."""
    from ..codegen.c import _contraction
    from ..codegen.c_gemm import prepack_side
    sides: dict = {}
    for (k, args), cfg in zip(kernels, configs):
        side = None
        if cfg and cfg.get("form") == "packed" and constants:
            side = prepack_side(_contraction(k), {b.name for b in k.buffers if args[b.name] in constants})
            if side and cfg.get("swap"):  # the renderer swaps a and b first
                side = "b" if side == "a" else "a"
        sides[k.name] = side if sides.get(k.name, side) == side else None
    return [dict(cfg, prepack=sides[k.name]) if cfg and sides.get(k.name) else cfg
            for (k, _), cfg in zip(kernels, configs)]


def _render_kernel(k, cfg, target):
    from ..codegen.c import render_kernel
    return render_kernel(k, cfg)


def _default_config(k, target):
    from ..codegen.c import default_config
    from .cpu import has_avx512, has_avx512_bf16
    return default_config(k, wide=has_avx512(), bf16=has_avx512_bf16())


def _space(k, level, target):
    from ..codegen.c import space
    from .cpu import has_avx512_bf16
    return space(k, bf16=has_avx512_bf16())


def _executor(program):
    from .cpu import CPUExecutor
    return CPUExecutor(program)


def _compiler(source, target):
    from .cpu import compile_c
    return compile_c(source)


def online_softmax(k, form, target=None):
    """The hook that lets the lowering stream attention on the CPU (codegen/c_online.py). Not the
    host Target's default: measured on the 2-core VM, the one-pass loop ran 0.35-1.1x the three
    kernels with packed GEMMs (bench/results/attention-cpu-2026-11-26.txt); a Target made with
    `dataclasses.replace(target, online_softmax=online_softmax)` takes it."""
    from ..codegen.c_online import applicable
    return applicable(form)


online_softmax.prologues = True  # type: ignore[attr-defined]  # (c_online renders computed q and masks)


def _identity(target) -> str:
    from .cpu import compiler_identity, cpu_identity
    return f"{cpu_identity()}|{compiler_identity()}"


# The split thresholds are the H100's (SplitPolicy's defaults) except split-K: the packed GEMM form
# splits C over the cores in 8x32 tiles, so a GEMM with a few 64x64 tiles needs no k split (which
# wrote strided partials and summed them in a second kernel: the 64x784 @ 784x512 MLP layer took
# 0.9-1.5 ms split, see bench/results/cpu-gemm-2026-11-25.json for it unsplit).
HOST_CPU = Target(
    kind="cpu", preset="host-cpu", sm_count=os.cpu_count() or 1, split=SplitPolicy(tiles_few=2),
    render_program=_render_program, render_kernel=_render_kernel, default_config=_default_config,
    search_space=_space, executor=_executor, compiler=_compiler, identity_of=_identity, present=True)

register_preset("host-cpu", HOST_CPU)
register_kind("cpu", lambda index: HOST_CPU, lambda: True, "host-cpu")
