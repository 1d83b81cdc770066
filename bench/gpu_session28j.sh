#!/usr/bin/env bash
# Twenty-eighth session, run j: the megakernel with one call per task (the task function loops over
# its blocks; before: a call per block, whose caller-saved registers were spilled around every call:
# 4.2 M local memory requests a step in run i), with and without tasks capped at 36 KB of shared
# memory (L1 for the GEMV tasks), traced; the megakernel CUDA tests first.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 6 -rf -q 2>&1 | tail -2
timeout 480 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 2 --fuzz-runs 50 \
  --trace-dir "$OUT" --options '{"s36_ps3": {"task_smem": 36864, "per_sm": 3}, "fuse_s36_ps3": {"fuse": true, "task_smem": 36864, "per_sm": 3}}' \
  2>&1 | grep -v -i warn | tail -5
