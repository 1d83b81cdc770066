#!/usr/bin/env bash
# Twenty-ninth session, run g: four and five workers per SM (the GEMVs' 2048 / 512 blocks over 528
# workers: 3.9 / 1 a worker instead of 5.2 / 1.3 — the run-f trace's imbalance, 11 us a layer), and
# four with tasks capped at 24 KB.
set -u
. bench/gpu_env.sh
export OUT
timeout 330 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 20 \
  --fuzz-options '{"per_sm": 4}' \
  --options '{"ps4": {"per_sm": 4}, "ps4_t24k": {"per_sm": 4, "task_smem": 24576}, "ps5": {"per_sm": 5}}' \
  2>&1 | grep -v -i warn | tail -1
