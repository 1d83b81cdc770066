#!/usr/bin/env bash
# Twenty-eighth session, run g: does the workers' shared memory starve L1? (3 workers x 67 KB leave
# ~28 KB of L1 for the GEMV tasks' loads in flight.) The megakernel with tasks capped at 36 / 20 KB of
# shared memory (flash-decoding's ring of 16-key tiles / 2 warps) at 3 and 4 workers per SM, and with
# fuse; device spans from the profiler.
set -u
. bench/gpu_env.sh
export OUT
timeout 560 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 10 \
  --options '{"s36_ps3": {"task_smem": 36864, "per_sm": 3}, "s20_ps3": {"task_smem": 20480, "per_sm": 3}, "s36_ps4": {"task_smem": 36864, "per_sm": 4}, "fuse_s36_ps3": {"fuse": true, "task_smem": 36864, "per_sm": 3}}' \
  2>&1 | grep -v -i warn | tail -3
