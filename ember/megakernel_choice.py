"""em.compile(..., megakernel=True | "auto"): the lowered program as one persistent kernel, or the
faster of that and the kernel-by-kernel program (docs/megakernel.md).

True builds the megakernel (an error names what stops it). "auto" on a device that is here builds
both, checks the megakernel's outputs against the kernel-by-kernel program's on random inputs
(two seeds, the state inputs given the same copies), times both in alternation and keeps the
faster; the choice and its times are in `program.meta["megakernel_choice"]`. Without a device
(a preset such as "h100") "auto" keeps the kernel-by-kernel program: nothing can be measured."""
from __future__ import annotations

import numpy as np

from . import symbolic as sm
from .search.oracle import close

ROUNDS = 5  # alternating timings of the two programs (each the median of 10 replays)


def task_configs(lowered, target, threads: int | None = None, unroll: bool = True, per_sm: int | None = None,
                 fuse: bool = False, task_smem: int | None = None, warp_min_grid: int = 0, sizes: list | None = None,
                 decode_splits: int = 0, decode_stages: int = 0) -> list:
    """Each kernel's default schedule made a task's (target.task_config, at most `threads` threads
    a task where given; `unroll`: row kernels' reduction loops unrolled where their trip count is
    fixed, knob `unroll`, the default: a warp-mode GEMV task's lane otherwise keeps one iteration's
    loads in flight — Llama-1B decode at context 1024 2.50 -> 2.24 ms a step on the H100,
    bench/results/gpu-session28-2026-11-27/b/); where the renderer refuses the smaller block, only
    the clusters come off. `per_sm`: workers per SM asked for; tasks over that share of the SM's
    shared memory get smaller schedules (task_config's `max_smem`). `fuse`: a warp-mode task's
    independent reductions over the same range in one loop (SwiGLU's gate and up rows; knob `fuse`).
    `task_smem`: a cap on a task's shared memory (what the workers reserve is not L1's);
    `warp_min_grid`: GEMVs to warp mode only where at least that many blocks remain. `sizes`, where
    given, receives each task's (threads, dynamic shared memory). `decode_splits`: flash-decoding's
    keys over that many tasks a head group (0: its cluster's blocks); `decode_stages`: its ring's slots."""
    from .backends.cuda_megakernel import smem_per_sm
    from .codegen.cuda import render_kernel
    out = []
    kw = dict({"max_threads": threads} if threads else {}, warp_min_grid=int(warp_min_grid), decode_splits=int(decode_splits),
              decode_stages=int(decode_stages))
    if per_sm:
        kw["max_smem"] = smem_per_sm(target) // int(per_sm) - WORKER_OVERHEAD
    if task_smem is not None:  # a cap of its own: the shared memory the workers leave to L1
        kw["max_smem"] = min(kw.get("max_smem", 1 << 30), int(task_smem))
    for k, _ in lowered.kernels:
        base = target.default_config(k, target)
        cfg = target.task_config(k, base, target, **kw)
        if unroll and cfg.get("mode") in ("warp", "block"):  # (True: loops over UNROLL_MAX by UNROLL_PART; n: by n)
            cfg = dict(cfg, unroll=1 if unroll is True else int(unroll))
        if fuse and cfg.get("mode") == "warp":
            cfg = dict(cfg, fuse=1)
        try:
            launch = render_kernel(k, cfg, target)[1]
        except Exception:  # noqa: BLE001 - a mode without that block size: keep its own
            cfg = target.task_config(None, base, target, max_threads=1 << 30)
            launch = {}
        if sizes is not None:
            sizes.append((int(launch.get("block", 0)), int(launch.get("smem", 0))))
        out.append(cfg)
    return out


# shared memory the workers leave to L1 (the GEMV tasks' loads in flight pass through it): three
# workers of 67 KB left ~28 KB; with tasks capped so that 96 KB remain (flash-decoding in 16-key
# tiles) the Llama-1B step's device time fell 4-5% in three runs (1.799 -> 1.711, 1.745 -> 1.693,
# 1.521 -> 1.455 ms: bench/results/gpu-session28-2026-11-27/{g,j,o}/)
L1_RESERVE = 96 * 1024
# workers per SM unless per_sm, task_smem or l1_reserve is given: the decode step's GEMV launches
# (2048 and 512 blocks) split evenly over 264 workers (7.8 and 1.9 a worker: the slowest 3% over the
# mean) where 396 gave the slowest worker 16% and 55% more; Llama-1B decode at context 1024 on the
# H100 1.393 -> 1.310 ms with 2 against 3 (4 and 5: 1.466 and 1.686; bench/results/gpu-session29-2026-11-27/g/, h/)
PER_SM = 2
WORKER_OVERHEAD = 3 * 1024  # per worker beyond its tasks' shared memory: static arrays (~2 KB), the driver's 1 KB


def _leave_l1(target, sizes: list, reserve: int) -> tuple[int, int] | None:
    """(workers per SM, a task shared-memory cap) that keeps the worker count the tasks allow and
    leaves `reserve` bytes of the SM's shared memory to L1; None where it already does."""
    from .backends.cuda_megakernel import smem_per_sm, workers_per_sm
    threads = max((t for t, _ in sizes), default=0)
    smem = max((m for _, m in sizes), default=0)
    if not threads:
        return None
    k = workers_per_sm(threads, smem, target, WORKER_OVERHEAD - 1024)
    if k * (smem + WORKER_OVERHEAD) <= smem_per_sm(target) - reserve:
        return None
    cap = (smem_per_sm(target) - reserve) // k - WORKER_OVERHEAD
    return (k, cap) if cap > 0 else None


# the megakernels "auto" verifies and times (without options of the user's): the default and one
# 256-thread worker per SM (Llama-1B decode at context 1024 on the H100: 1.306 / 1.286 ms,
# bench/results/gpu-session29-2026-11-27/i/; it mixes task sizes, so it is not the default). Per-slice
# megakernels (option `slices`) join once they have run on a GPU (bench/gpu_session30a.sh)
AUTO_CANDIDATES = ({}, {"per_sm": 1, "threads": 256})


def build_with_megakernel(lowered, target, names, kind: str, meta: dict, mode, build, as_kernels: bool = False,
                          **options):
    """The program as the megakernel (mode True), or (mode "auto") the fastest of the kernels and
    the megakernel candidates that agree with them — AUTO_CANDIDATES, or the one the user's
    options give; `as_kernels`: the task schedules launched kernel by kernel."""
    if target.megakernel is None and not as_kernels:
        if mode is True:
            raise ValueError(f"megakernel=True: the {target.kind} target has no megakernel (CUDA only)")
        return build(lowered, target, names, kind, meta=meta)
    if as_kernels:  # the task schedules, launched kernel by kernel: a reference close to the megakernel
        configs, _ = _task_plan(lowered, target, dict(options))
        return build(lowered, target, names, kind, meta=dict(meta), configs=configs)
    from .codegen.cuda_megakernel import NotTaskable
    candidates = [options] if mode is True or options else [dict(c) for c in AUTO_CANDIDATES]
    built, refused = [], None
    for opts in candidates:
        try:
            built.append((opts, _megakernel(lowered, target, names, kind, meta, build, dict(opts))))
        except NotTaskable as e:
            if mode is True:
                raise ValueError(f"megakernel=True: this program cannot be one persistent kernel: {e}") from None
            refused = refused or e
    if not built:
        prog = build(lowered, target, names, kind, meta=meta)
        prog.meta["megakernel_choice"] = {"chosen": "kernels", "why": f"not taskable: {refused}"}
        return prog
    if mode is True:
        mk = built[0][1]
        mk.meta["megakernel_choice"] = {"chosen": "megakernel", "why": "forced (megakernel=True)"}
        return mk
    kernels = build(lowered, target, names, kind, meta=meta)
    if not target.runnable:
        kernels.meta["megakernel_choice"] = {"chosen": "kernels", "why": "auto: no device here to measure on"}
        return kernels
    return _fastest(kernels, built)


def _fastest(kernels, built: list):
    """The kernels or the fastest megakernel candidate that agrees with them (each timed in
    alternation with the kernels); the record of every candidate in meta["megakernel_choice"]."""
    tried, best, t_k_all = [], None, []
    for opts, mk in built:
        why = agree(mk, kernels)
        if why:
            tried.append({"options": opts, "rejected": why})
            continue
        t_mk, t_k = timings(mk, kernels)
        t_k_all.append(t_k)
        tried.append({"options": opts, "megakernel_us": t_mk, "kernels_us": t_k})
        if best is None or t_mk < best[0]:
            best = (t_mk, mk, opts)
    t_k = float(np.median(t_k_all)) if t_k_all else None
    if best is None or best[0] >= t_k:
        kernels.meta["megakernel_choice"] = {"chosen": "kernels", "kernels_us": t_k, "candidates": tried,
                                             **({"why": "every megakernel rejected"} if best is None else {})}
        return kernels
    best[1].meta["megakernel_choice"] = {"chosen": "megakernel", "options": best[2], "megakernel_us": best[0],
                                         "kernels_us": t_k, "candidates": tried}
    return best[1]


def _task_plan(lowered, target, knobs: dict) -> tuple[list, dict]:
    """(each kernel's task schedule, the options left for the megakernel program) from a
    candidate's options: PER_SM workers per SM unless per_sm, task_smem or l1_reserve is given."""
    threads, unroll = knobs.pop("threads", None), knobs.pop("unroll", True)
    if not {"per_sm", "task_smem", "l1_reserve"} & set(knobs):
        knobs["per_sm"] = PER_SM
    per_sm, fuse, task_smem = knobs.get("per_sm"), bool(knobs.pop("fuse", False)), knobs.pop("task_smem", None)
    warp_min_grid, reserve = int(knobs.pop("warp_min_grid", 0)), int(knobs.pop("l1_reserve", L1_RESERVE))
    splits, stages = int(knobs.pop("decode_splits", 0)), int(knobs.pop("decode_stages", 0))
    from .codegen.cuda_flash_decode import SPLITS
    if splits and splits not in SPLITS:
        raise ValueError(f"megakernel_options decode_splits={splits}: one of {', '.join(map(str, SPLITS))}")
    sizes: list = []
    configs = task_configs(lowered, target, threads, unroll, per_sm, fuse, task_smem, warp_min_grid, sizes, splits, stages)
    fit = _leave_l1(target, sizes, reserve) if per_sm is None and task_smem is None and reserve else None
    if fit is not None:  # the same workers per SM, tasks over the cap in smaller schedules
        knobs["per_sm"] = fit[0]
        configs = task_configs(lowered, target, threads, unroll, fit[0], fuse, fit[1], warp_min_grid, decode_splits=splits,
                               decode_stages=stages)
    return configs, knobs


def _megakernel(lowered, target, names, kind: str, meta: dict, build, knobs: dict):
    """One megakernel candidate, compiled and loaded where the device is here (the occupancy check
    runs then); NotTaskable where a kernel cannot be a task."""
    configs, knobs = _task_plan(lowered, target, knobs)
    base = build(lowered, target, names, kind, meta=dict(meta), configs=configs, load=False)
    mk = target.megakernel(base, **knobs)
    if target.runnable:
        mk.executor  # noqa: B018 - compile and load now
    return mk


def random_inputs(program, seed: int) -> tuple[dict, dict]:
    """(inputs, dims) for a run: bounded dims at half their bound, others 7; floats standard normal,
    integers in [0, 4) (token ids, positions, starts)."""
    rng = np.random.default_rng(seed)
    env = {d: max(1, program.dim_bounds[d] // 2) if d in program.dim_bounds else 7 for d in program.dims}
    arrays = {}
    for spec in program.input_specs:
        shape = tuple(int(sm.evaluate(s, env)) for s in spec.shape)
        if spec.dtype.is_float:
            a = rng.standard_normal(shape)
        elif spec.dtype.is_bool:
            a = rng.random(shape) < 0.5
        else:
            a = rng.integers(0, 4, shape)
        arrays[spec.arg] = np.asarray(a).astype(spec.dtype.np)
    dims = {d: v for d, v in env.items() if d not in _shape_dims(program)}
    return arrays, dims


def _shape_dims(program) -> set:
    return set().union(*(sm.free_vars(s) for spec in program.input_specs for s in spec.shape))


def agree(a, b, seeds=(0, 1)) -> str | None:
    """None when programs a and b give the same outputs (within their dtype's tolerance) and leave
    the same state on random inputs; else what differed."""
    for seed in seeds:
        arrays, dims = random_inputs(a, seed)
        ca = {n: x.copy() for n, x in arrays.items()}
        cb = {n: x.copy() for n, x in arrays.items()}
        pairs = [(f"output {i}", x, y, a.buffers[a.outputs[i]].dtype)
                 for i, (x, y) in enumerate(zip(_run(a, ca, dims), _run(b, cb, dims)))]
        pairs += [(f"state {n}", ca[n], cb[n], a.buffers[f"in_{n}"].dtype) for n in a.state_inputs]
        for what, x, y, dtype in pairs:
            why = close(np.asarray(x), _wide(np.asarray(y)), dtype)
            if why:
                return f"seed {seed}, {what}: {why}"
    return None


def _run(program, inputs: dict, dims: dict) -> list:
    """The program's outputs as a list (its states written back into `inputs`)."""
    bound, env = program._bind(inputs, dims)
    return program.executor.run(program, bound, env)


def _wide(y: np.ndarray) -> np.ndarray:
    return y.astype(np.float64) if y.dtype.kind == "f" else y


def timings(a, b) -> tuple[float, float]:
    """Median us of programs a and b, timed in alternation on the same inputs."""
    arrays, dims = random_inputs(a, 0)
    bound, env = a._bind(arrays, dims)
    ta, tb = [], []
    for _ in range(ROUNDS):
        ta.append(a.executor.time_program(a, bound, env, 10))
        tb.append(b.executor.time_program(b, bound, env, 10))
    return float(np.median(ta)), float(np.median(tb))
