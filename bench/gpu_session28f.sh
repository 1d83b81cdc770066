#!/usr/bin/env bash
# Twenty-eighth session, run f: the megakernel (residual stream materialised, unrolled row tasks)
# with SwiGLU's gate and up rows in one unrolled loop (option fuse: one DRAM round trip a row instead
# of two) and with each task's weights asked of L2 before its wait (prefetch 32 KB); device spans from the profiler (cuda_time adds the host share).
set -u
. bench/gpu_env.sh
export OUT
timeout 560 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 10 \
  --options '{"fuse": {"fuse": true}, "pf32k": {"prefetch": 32768}}' \
  2>&1 | grep -v -i warn | tail -9
