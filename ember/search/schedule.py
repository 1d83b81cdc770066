"""Schedule search: for each kernel of a lowered program, try the knobs of its space (space.py) and
keep the fastest *verified* configuration.

Kernels are searched most-expensive-first (by their time under the default schedule) while the
budget lasts. A candidate changes one kernel's configuration and keeps the best found so far for the
others; the whole program is checked against the reference (poisoned outputs, several seeds) before
the changed kernel is timed alone (CUDA events; early abandonment when the first run is 3x slower
than the best). Contractions then get an evolutionary refinement: mutations of the best tile shape
(one knob doubled or halved), kept when verified and faster. Winners are cached per kernel
(structural hash, dims binding, device, level).
"""
from __future__ import annotations

import json
import time

import numpy as np

from ..kernel.structure import UnsupportedKernel
from . import store


class Budget:
    def __init__(self, seconds: float):
        self.deadline = time.perf_counter() + seconds
        self.seconds = seconds

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def out(self) -> bool:
        return self.left() <= 0


class Stats:
    def __init__(self):
        self.tried = self.rejected = self.cached = 0
        self.rejections: list = []
        self.t0 = time.perf_counter()

    def line(self, best_us: float, base_us: float) -> str:
        sp_ = f"{base_us / best_us:.2f}x" if best_us and base_us else "-"
        return (f"search: {self.tried} candidates, {self.rejected} rejected, {self.cached} from cache, "
                f"best {best_us:.1f} us (default {base_us:.1f} us, {sp_}), {time.perf_counter() - self.t0:.0f} s")


def _cfg_key(cfg: dict) -> str:
    return json.dumps(cfg, sort_keys=True)


def kernel_store_key(k, env: dict, target, level: str) -> str:
    return store.key_of(k.key, sorted(env.items()), target.identity(), level)


def search_schedules(lowered, target, oracle, level: str, budget: Budget, stats: Stats,
                     progress=None, rng=None, *, build) -> list:
    """Best verified config per kernel, from the target's search space (CUDA knobs: search/space.py;
    CPU knobs: codegen/c.py `space`). `build(lowered, target, names, kind, configs=...)` makes a
    runnable Program (the pipeline's build_program)."""
    n = len(lowered.kernels)
    configs = [target.default_config(k, target) for k, _ in lowered.kernels]

    def render(k, cfg):
        return target.render_kernel(k, cfg, target)
    rng = rng or np.random.default_rng(0)
    env = oracle.env
    arrays = oracle.cases[0][0]

    def program(cfgs):
        return build(lowered, target, None, "tuple", configs=cfgs)

    base = program(configs)
    why = oracle.check(base)
    if why:
        raise RuntimeError(f"the default lowering disagrees with the reference ({why}): a compiler bug")
    times = [base.executor.time_kernel(base, arrays, env, i, 5) for i in range(n)]
    order = sorted(range(n), key=lambda i: -times[i])
    for i in order:
        k = lowered.kernels[i][0]
        skey = kernel_store_key(k, env, target, level)
        hit = store.load("kernel", skey)
        if hit is not None:
            trial = list(configs)
            trial[i] = hit["cfg"]
            if oracle.check(program(trial)) is None:  # a cached winner is re-verified, never trusted
                configs, times[i] = trial, hit["time_us"]
                stats.cached += 1
                continue
        if budget.out():
            continue
        best_cfg, best_t = configs[i], times[i]
        seen = {render(k, best_cfg)}
        cands = target.search_space(k, level, target)
        if target.precompile:
            target.precompile(k, cands, target)

        def try_cfg(cfg):
            nonlocal best_cfg, best_t
            try:
                src = render(k, cfg)
            except UnsupportedKernel:
                return
            if src in seen:
                return
            seen.add(src)
            trial = list(configs)
            trial[i] = cfg
            stats.tried += 1
            try:
                prog = program(trial)
            except Exception as e:  # a config that does not compile or load is a rejected candidate
                stats.rejected += 1
                stats.rejections.append((k.name, cfg, f"build: {type(e).__name__}: {str(e)[:200]}"))
                return
            try:
                why = oracle.check(prog)
                t = None if why else prog.executor.time_kernel(prog, arrays, env, i, 7, limit_us=3 * best_t)
            except Exception as e:  # a launch that fails is a rejected candidate, not a crashed search
                why = f"run: {type(e).__name__}: {str(e)[:200]}"
            if why:
                stats.rejected += 1
                stats.rejections.append((k.name, cfg, why))
                return
            if t < best_t:
                best_cfg, best_t = cfg, t
            if progress:
                progress(stats, i, best_t)

        for cfg in cands:
            if budget.out():
                break
            try_cfg(cfg)
        mutate = target.refine(best_cfg) if target.refine else None
        if mutate is not None:  # evolutionary refinement of the tile shape (CUDA-core GEMMs)
            for _ in range(12 if level == "fast" else 40):
                if budget.out():
                    break
                m = mutate(best_cfg, rng)
                if m is not None:
                    try_cfg(m)
        configs[i], times[i] = best_cfg, best_t
        store.save("kernel", skey, {"cfg": best_cfg, "time_us": best_t, "kernel": k.name})
    return configs
