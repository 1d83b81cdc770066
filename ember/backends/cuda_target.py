"""The CUDA target: CUDA C rendered by codegen/cuda.py, compiled by NVRTC, run through cuda.core
(backends/cuda.py). Its numbers come from the driver when a GPU is present, from a preset otherwise."""
from __future__ import annotations

import contextlib
import functools
import os

from .target import (
    DeviceError,
    SplitPolicy,
    Target,
    register_kind,
    register_preset,
    with_device_values,
)

KB = 1024
# bytes of weights a kernel may pull into L2 across its launch gap (codegen/cuda_pdl.py): off by default,
# measured slower on a Llama-1B decode step (8 MiB: +2%, 32 MiB: +7%; bench/results/pdl-h100-2026-11-26a.json)
PREFETCH_BUDGET = 0
DECODE_EARLY = 2  # decode attention's first key tiles before its wait (_with_early_keys; measured: see there)


@functools.cache
def cuda_probe() -> tuple:
    """(True, "") when a CUDA driver and at least one GPU are usable, else (False, why)."""
    try:
        from cuda.bindings import driver
    except Exception as e:  # noqa: BLE001 - any failure to import means no CUDA
        return False, f"cuda.bindings is not importable: {type(e).__name__}"
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:  # noqa: BLE001 - no libcuda: cuda.pathfinder raises its own error types
        return False, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}" if str(e) else type(e).__name__
    if int(err) != 0:
        return False, f"cuInit failed: {err}"
    err, n = driver.cuDeviceGetCount()
    if int(err) != 0 or n == 0:
        return False, "the driver reports no GPU"
    return True, ""


def cuda_available() -> bool:
    return cuda_probe()[0]


def _require_cuda(what: str) -> None:
    ok, why = cuda_probe()
    if not ok:
        raise DeviceError(f"device {what!r} requested but no CUDA driver/GPU was found ({why}); "
                          f"use device='cpu', or a preset such as 'h100' to generate code only")


def _render_program(kernels, buffer_index, dim_index, configs, target, constants=frozenset()):
    from ..codegen.cuda import render_program
    configs = _resolved_defaults(kernels, configs, target)
    return render_program(kernels, _with_early_keys(kernels, _with_prefetch(kernels, configs, target, constants), target),
                          target)


def _resolved_defaults(kernels, configs, target) -> list:
    """Every kernel's config, a default resolved once per kernel structure (`Kernel.key`, names left
    out) in this program: an unrolled recurrence repeats a few kernels thousands of times, and a
    default is ~10 ms of analysis (40_GRUHidden, 8705 kernels: a third of its compile). Kept per
    program, not across programs, so a changed switch is never served an old default."""
    from ..codegen.cuda import default_config
    by_structure: dict = {}
    out = []
    for (k, _), cfg in zip(kernels, list(configs or [None] * len(kernels))):
        if cfg is None:
            key = k.key
            if key not in by_structure:
                by_structure[key] = default_config(k, target)
            cfg = dict(by_structure[key])
        out.append(cfg)
    return out


def _prefetch_budget() -> int:
    """Bytes of constants a kernel may pull into L2 while it waits for the kernel before it
    (codegen/cuda_pdl.py); EMBER_L2_PREFETCH overrides (0: none)."""
    return max(0, int(os.environ.get("EMBER_L2_PREFETCH", str(PREFETCH_BUDGET))))


def _with_prefetch(kernels, configs, target, constants) -> list | None:
    """The configs with each streaming kernel's constant operands (those constant in every launch
    of that kernel) and their prefetch bytes (cfg `prefetch`), the budget split evenly among them."""
    from ..codegen.cuda import default_config
    from ..codegen.cuda_pdl import PREFETCH_MODES, has_pdl, streamed_constants
    budget = _prefetch_budget()
    if not constants or not budget or not has_pdl(target):
        return configs
    chosen = list(configs or [None] * len(kernels))
    common: dict = {}
    for (k, args), cfg in zip(kernels, chosen):
        mine = dict(streamed_constants(k, {b.name for b in k.buffers if args.get(b.name) in constants}))
        common[k.name] = {n: v for n, v in mine.items() if n in common.get(k.name, mine)}
    out = []
    for (k, _), cfg in zip(kernels, chosen):
        full = dict(cfg or default_config(k, target))
        params = common[k.name]
        if full.get("mode") not in PREFETCH_MODES or not params:
            out.append(cfg)
            continue
        share = budget // len(params)
        out.append(dict(full, prefetch=[[n, min(v, share)] for n, v in sorted(params.items())]))
    return out


def _early_keys_default() -> int:
    """Decode attention's first key tiles before its grid-dependency wait (codegen/cuda_flash_early.py):
    0 off, 1 the kernel before triggers right after its own wait, 2 (a decode attention before) after
    its key loop, 3 (the same) as each of its warps asks for its last tiles; EMBER_DECODE_EARLY overrides."""
    return int(os.environ.get("EMBER_DECODE_EARLY", str(DECODE_EARLY)))


def _with_early_keys(kernels, configs, target) -> list | None:
    """The configs with knob `early_keys` on each decode attention whose kernel before it, in program
    order, writes neither its K nor its V buffer (by name: buffers live at the same time never share
    memory, and a state written in place keeps its name), and `pdl_late` on that kernel before — so
    nothing still running when the attention's blocks start can write the cache (codegen/cuda_pdl.py).
    A decode config's own `early_keys` (0, 1, 2) overrides the default; the first kernel never gets it
    (what runs before the program is unknown). A collective between two kernels keeps a plain edge."""
    from ..codegen.cuda import default_config
    from ..codegen.cuda_flash_early import early_keys_applicable
    from ..codegen.cuda_pdl import has_pdl
    from ..kernel.online import online_form
    full = [dict(c or default_config(k, target)) for (k, _), c in zip(kernels, list(configs or [None] * len(kernels)))]
    if not any(c.get("mode") == "decode" for c in full):
        return configs
    for i, cfg in enumerate(full):
        if cfg.get("mode") != "decode":
            continue
        how = int(cfg.pop("early_keys", _early_keys_default()) or 0)  # (set again below where it holds)
        if i == 0 or not how or not has_pdl(target):
            continue
        (k, args), (pk, pargs) = kernels[i], kernels[i - 1]
        form = online_form(k)
        if form is None or not early_keys_applicable(form, cfg):
            continue
        cache = {args.get(form.k.args[0]), args.get(form.v.args[0])}
        written = {pargs.get(b.name) for b in pk.buffers if b.role == "out"}
        if None in cache or cache & written:
            continue
        cfg["early_keys"] = 1
        late = how if how in (2, 3) and full[i - 1].get("mode") == "decode" else 1
        full[i - 1]["pdl_late"] = max(int(full[i - 1].get("pdl_late", 0) or 0), late)
    return full


def _render_kernel(k, cfg, target):
    from ..codegen.cuda import render_kernel
    return render_kernel(k, cfg, target)[0]


def _default_config(k, target):
    from ..codegen.cuda import default_config
    return default_config(k, target)


def _online_softmax(k, form, target=None):
    from ..codegen.cuda_schedule import flash_config
    return flash_config(k, target) is not None


# computed q prologues and masks inlined into streamed kernels (kernel/lower.py StreamRoots): the
# decode step's rotary-q kernels disappear (Llama-1B shapes: 168 -> 151 kernels, 1.38 -> 1.18 ms on
# an H200, bench/results/pdl-prologues-h200-2026-11-26b.json; CUDA tests pass). EMBER_STREAM_PROLOGUES=0: off
_online_softmax.prologues = os.environ.get("EMBER_STREAM_PROLOGUES", "1") != "0"  # type: ignore[attr-defined]
# attention's backward with its scores recomputed (kernel/scores.py, codegen/cuda_scores.py); EMBER_STREAM_SCORES=0: off
_online_softmax.scores = os.environ.get("EMBER_STREAM_SCORES", "1") != "0"  # type: ignore[attr-defined]


def _merge_siblings(merged) -> bool:
    """Whether a merged pair of scores kernels (kernel/siblings.py) is worth one kernel: two `mma`
    tails sharing a score product (dK and dV: Sᵀ = k qᵀ), the same causal key bounds, head dims up to
    SIBLING_DEPTH, and a schedule that fits (at head dim 128 the second accumulator's 64 registers a
    thread come from the row operands' fragments, read from shared memory instead: knob `afrag`).
    Measured on the H100 (bench/results/gpu-session27-2026-11-27/, causal bf16): dK + dV 124 + 92 ->
    171 us at L 1024 D 64, 328 + 261 -> 418 us at L 2048 D 128."""
    from ..codegen.cuda_schedule import scores_config
    from ..kernel.scores import key_bounds, score_forms, shared_scores
    forms = score_forms(merged)
    if forms is None or len(forms) != 2 or any(f.tail != "mma" for f in forms):
        return False
    if any(s.depth.value > SIBLING_DEPTH for f in forms for s in f.scores) or \
            any(f.out_extent.value > SIBLING_DEPTH for f in forms):
        return False
    scores, _ = shared_scores(forms)
    if len(scores) == sum(len(f.scores) for f in forms) or key_bounds(forms[0])[:2] != key_bounds(forms[1])[:2]:
        return False
    return scores_config(merged, None) is not None


def _sibling_candidate(k) -> bool:
    from ..kernel.scores import score_form
    f = score_form(k)
    return f is not None and f.tail == "mma"


def _merge_stat_chain(merged) -> bool:
    """Whether a merged chain of row statistics (kernel/siblings.py, `chain`) renders in one online
    pass: a max, then sums of exp2(c (X - max)) times factors (kernel/scores.py online_stats)."""
    from ..codegen.cuda_schedule import scores_config
    from ..kernel.scores import online_stats, score_forms
    forms = score_forms(merged)
    return forms is not None and online_stats(forms) is not None and scores_config(merged, None) is not None


def _stat_candidate(k) -> bool:
    from ..kernel.scores import score_form
    f = score_form(k)
    return f is not None and f.tail in ("max", "sum")


_merge_stat_chain.candidate = _stat_candidate  # type: ignore[attr-defined]
SIBLING_DEPTH = int(os.environ.get("EMBER_SIBLING_DEPTH", "128"))  # (at 128 the fragments are read from shared memory)
_merge_siblings.candidate = _sibling_candidate  # type: ignore[attr-defined]
# dK and dV of attention's backward as one kernel (kernel/siblings.py); EMBER_MERGE_SIBLINGS=0: off
if _online_softmax.scores and os.environ.get("EMBER_MERGE_SIBLINGS", "1") != "0":  # type: ignore[attr-defined]
    _online_softmax.siblings = _merge_siblings  # type: ignore[attr-defined]
    # the softmax's max, sum and D = sum P dP as one online kernel; EMBER_MERGE_SIBLINGS=0: off too
    _online_softmax.stat_chains = _merge_stat_chain  # type: ignore[attr-defined]


def _space(k, level, target):
    from ..search.space import cuda_space
    return cuda_space(k, level, target)


def _refine(cfg):
    """The mutation the search refines `cfg` with: CUDA-core GEMM tile shapes only."""
    if cfg.get("mode") != "gemm":
        return None
    from ..search.space import mutate_gemm
    return mutate_gemm


def _executor(program):
    _require_cuda(program.device)
    from .cuda import CUDAExecutor
    return CUDAExecutor(program)


def _compiler(source, target):
    from .cuda import compile_cuda
    return compile_cuda(source, target.arch)


def _precompile(k, cfgs, target):
    """Compile every config's kernel up front, in parallel threads (NVRTC releases the GIL), so the
    search's sequential verify-and-time loop only hits the cubin cache."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from ..codegen import cuda as cg
    from .cuda import compile_cuda
    srcs = set()
    for cfg in cfgs:
        try:
            srcs.add(cg.PRELUDE + "\n" + cg.render_kernel(k, cfg, target)[0])
        except cg.UnsupportedKernel:
            pass

    def one(src):
        try:
            compile_cuda(src, target.arch)
        except Exception:  # noqa: BLE001,S110 - reported when the candidate is built
            pass
    with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 2)) as pool:
        list(pool.map(one, srcs))


@contextlib.contextmanager
def _search_session(uploads: dict | None = None):
    """The search's candidates share one upload of the constants (so do the programs of one model,
    ember/llm, which keeps `uploads` between its compiles)."""
    from .cuda import CUDAExecutor
    CUDAExecutor.shared_uploads = {} if uploads is None else uploads
    try:
        yield
    finally:
        CUDAExecutor.shared_uploads = None


def _identity(target) -> str:
    if target.present:
        from .cuda import device
        return device(target.index).name
    return f"{target.preset}|{target.arch}"


def _tuning(smem_per_block: int) -> dict:
    """Renderer and schedule constants that follow the hardware. The tile table's rates were
    measured on the H100 (codegen/cuda_schedule.py); other GPUs use them until measured."""
    from ..codegen import cuda_schedule as cs
    room = smem_per_block - 27 * KB  # shared memory left beside the kernel's own (200 KB of the H100's 227)
    return {"smem_cache_max": room, "mma_smem_max": room, "cluster_row_bytes": 96 * KB,
            "mma_tiles": cs.MMA_DEFAULT_TILES}


def _task_config(k, cfg, target, **kw):
    from ..codegen.cuda_megakernel import task_config
    return task_config(k, cfg, target, **kw)


def _megakernel(program, **knobs):
    from .cuda_megakernel import megakernel_program
    return megakernel_program(program, program.target, **knobs)


# GEMMs of 2..8 rows (a decode step's batch) run as GEMVs shared by the rows (cuda_schedule.py
# few_bounded_rows), unsplit; EMBER_ROWS_GEMV=0 keeps them on split-K tensor-core tiles
ROWS_GEMV = 0 if os.environ.get("EMBER_ROWS_GEMV", "1") == "0" else 8

H100 = Target(
    kind="cuda", preset="h100", arch="sm_90a", compute_capability=(9, 0), sm_count=132,
    smem_per_block=227 * KB, smem_per_sm=228 * KB, memory_bytes=80 * 10**9,
    tensor_cores=("mma.sync.tf32", "wgmma"), device_memory=True,
    # (x @ W GEMVs split finer than the defaults: kernel/split.py, measured by bench/gemv_sweep.py)
    split=SplitPolicy(tiles_few=132, gemv_k_min=1024, gemv_chunk_min=256, gemv_wanted=2048, gemv_few=1024,
                      rows_gemv=ROWS_GEMV, long_k_cluster=True),
    tuning=_tuning(227 * KB),
    render_program=_render_program, render_kernel=_render_kernel, default_config=_default_config,
    search_space=_space, refine=_refine, executor=_executor, compiler=_compiler, precompile=_precompile,
    search_session=_search_session, identity_of=_identity, online_softmax=_online_softmax,
    task_config=_task_config, megakernel=_megakernel)

register_preset("h100", H100)
register_preset("sm_90", H100)


def detect(index: int) -> Target:
    """The Target of GPU `index`, its numbers read from the driver over the H100 preset's."""
    _require_cuda("cuda" if index == 0 else f"cuda:{index}")
    from cuda.bindings import driver
    err, n = driver.cuDeviceGetCount()
    if index >= n:
        raise DeviceError(f"device 'cuda:{index}' requested but only {n} GPU(s) are present")
    err, dev = driver.cuDeviceGet(index)
    A = driver.CUdevice_attribute

    def attr(name):
        err, v = driver.cuDeviceGetAttribute(getattr(A, name), dev)
        return int(v) if int(err) == 0 else None
    major = attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR")
    minor = attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")
    smem_block = attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
    err, mem = driver.cuDeviceTotalMem(dev)
    cores = ("mma.sync.tf32", "wgmma") if major == 9 else ("mma.sync.tf32",) if (major or 0) >= 8 else ()
    return with_device_values(
        # sm_90a: the H100's arch-specific instructions (wgmma, setmaxnreg) on top of sm_90's
        H100, index=index, arch=f"sm_{major}{minor}{'a' if (major, minor) == (9, 0) else ''}", compute_capability=(major, minor),
        sm_count=attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"), smem_per_block=smem_block,
        smem_per_sm=attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        memory_bytes=int(mem) if int(err) == 0 else None, tensor_cores=cores,
        tuning=_tuning(smem_block) if smem_block else None)


register_kind("cuda", detect, cuda_available, "h100", preferred=True)
