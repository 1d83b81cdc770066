#!/usr/bin/env bash
# Twenty-ninth session, run h: two workers per SM (gate/up's 2048 blocks and down's 512 over 264
# workers: 7.8 / 1.9 a worker, 3% over the mean instead of 16% / 55%; fewer warps in flight),
# and with the down projection's loop unrolled by 16.
set -u
. bench/gpu_env.sh
export OUT
timeout 330 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 20 \
  --fuzz-options '{"per_sm": 2}' \
  --options '{"ps2": {"per_sm": 2}, "ps2_u16": {"per_sm": 2, "unroll": 16}}' \
  2>&1 | grep -v -i warn | tail -1
