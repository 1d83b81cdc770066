#!/usr/bin/env bash
# Twenty-eighth session, run l: balanced GEMV launches in the megakernel (option warp_min_grid: a
# GEMV whose warp-mode grid would leave fewer blocks than that runs a block per row — the o and down
# projections' 512 blocks over 396 workers put two on some workers), with and without task_smem.
set -u
. bench/gpu_env.sh
export OUT
timeout 560 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 10 \
  --options '{"bal600": {"warp_min_grid": 600}, "bal792": {"warp_min_grid": 792}, "bal600_s36": {"warp_min_grid": 600, "task_smem": 36864, "per_sm": 3}}' \
  2>&1 | grep -v -i warn | tail -2
