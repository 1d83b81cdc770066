#!/usr/bin/env bash
# Twenty-eighth session, run o (the final build): the megakernel traced, and with tasks capped at
# 36 KB of shared memory (option task_smem) and fused SwiGLU rows, on the one-order build.
set -u
. bench/gpu_env.sh
export OUT
timeout 250 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 10 \
  --trace-dir "$OUT" --options '{"s36_ps3": {"task_smem": 36864, "per_sm": 3}, "fuse_s36_ps3": {"fuse": true, "task_smem": 36864, "per_sm": 3}}' \
  2>&1 | grep -v -i warn | tail -2
