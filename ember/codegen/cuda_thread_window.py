"""The default schedule of a thread-mode window (a depthwise conv's or a pool's taps, a thread per output):
whether its taps are unrolled, whether a thread takes a strip of neighbouring outputs (codegen/cuda_strip.py),
and whether its grid is capped so each thread loops over several (knob `gridcap`, codegen/cuda.py).
Called by cuda_schedule.default_config wherever it chooses thread mode for a window."""
from __future__ import annotations

import os

from ..kernel import ir
from ..kernel.interior import interior_form
from ..kernel.structure import Canon
from .cuda_strip import strip_plan

# the fewest taps of a thread-mode window default_config unrolls (EMBER_THREAD_UNROLL=1: every window of 2-32
# taps, =0: none). H200 (gpu-session40-2026-11-28/c/): a 27-tap avg pool 356 -> 118 us; 9-tap depthwise convs and
# 4-9-tap pools -4% to +12%, within the run's swing: so windows of more than 16 taps only (the search offers the rest)
THREAD_UNROLL_MIN = {"1": 2, "0": 33}.get(os.environ.get("EMBER_THREAD_UNROLL", ""), 17)
# neighbouring outputs a thread-mode window computes together where they share loads (codegen/cuda_strip.py;
# EMBER_THREAD_STRIP=0 off; measured in `_strip`)
THREAD_STRIP = int(os.environ.get("EMBER_THREAD_STRIP", "4"))
# blocks an SM for an unstripped window of at most GRIDCAP_TAPS taps (EMBER_THREAD_GRIDCAP=0: uncapped). H200
# (gpu-session46-2026-11-29/b/): the real KernelBench's 41 (an 8-tap dilated 1-D max pool, 3.2 G outputs, ~4 M
# blocks of 128 threads: achieved occupancy 36%, the blocks too short-lived for the block scheduler) 7568 -> 3344 us
# at 64 (3858 at 16); 44 unstripped 5069 -> 2010 at 16; but a 27-tap window (43) 1710 -> 1856-1918, a 16-tap
# one (42, rolled) unchanged, and on top of a strip (fewer, longer threads already) slower everywhere
THREAD_GRIDCAP = int(os.environ.get("EMBER_THREAD_GRIDCAP", "64"))
GRIDCAP_TAPS = 8
# a padded window's taps run unguarded where none can fail (knob `interior`, kernel/interior.py): built in the
# forty-sixth session with no device time left, untimed; EMBER_WINDOW_INTERIOR=1 makes it the default (A/B runs)
WINDOW_INTERIOR = os.environ.get("EMBER_WINDOW_INTERIOR", "0") == "1"


def thread_window(k: ir.Kernel, c: Canon, R) -> dict:
    """A thread per output (or per strip of outputs). A short window (a depthwise conv's 9 taps, a pool's
    27) is unrolled: its tap arithmetic folds to constants (THREAD_UNROLL_MIN; the search offers knob
    `unroll` to every window). (Real KernelBench 43's 27-tap dilated 3-D max pool took a branch without the
    unroll until the forty-sixth session: 5.47 -> 1.71 ms, its SMs had been 88% busy on tap index math.)"""
    unroll = R.is_const and THREAD_UNROLL_MIN <= R.value <= 32 and all(s.acc.dtype.is_float for s in c.stages)
    cfg = _strip({"mode": "thread", "threads": 128, "vec": 1, **({"unroll": 32} if unroll else {})}, k, c)
    if THREAD_GRIDCAP > 0 and "strip" not in cfg and R.is_const and R.value <= GRIDCAP_TAPS:
        cfg["gridcap"] = THREAD_GRIDCAP
    if WINDOW_INTERIOR and interior_form(c) is not None:
        cfg["interior"] = True
    return cfg


def _strip(cfg: dict, k: ir.Kernel, c: Canon) -> dict:
    """A thread-mode window with THREAD_STRIP neighbouring outputs a thread (2 where 4 share too little)
    wherever they share their loads (codegen/cuda_strip.py). H200, gpu-session45 e/: KernelBench 34's
    3x3 depthwise conv 644 -> 169 us (strip 2 322, 8 156), its 3x3 max pool (41) 248 -> 123, level 2's 20
    792 -> 451, the real KernelBench's depthwise 82 / 84 / 85 / 86 2.0-3.2x faster, 46's 3-D avg pool
    2782 -> 2497; nowhere slower (where no outer loop shares, the config is unchanged). Extents V does not
    divide (a last strip of the remainder) since the forty-sixth session (gpu-session46 b/): real KB 44's 1-D
    avg pool over 65537 outputs a row 5069 -> 1281 us, 42's 2-D max pool (511 x 511) 5063 -> 2109."""
    if THREAD_STRIP < 2:
        return cfg
    for v in dict.fromkeys((THREAD_STRIP, 2)):
        if strip_plan(k, c, v) is not None:
            return dict(cfg, strip=v)
    return cfg
