#!/usr/bin/env bash
# Twenty-eighth session, run c: the megakernel (row tasks unrolled, now the default) with more
# workers per SM (option per_sm: tasks over the SM's share of shared memory get smaller schedules —
# flash-decoding's ring of 16-key tiles / fewer warps) against the default 3 and the kernels, ctx 1024.
set -u
. bench/gpu_env.sh
export OUT
timeout 560 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 10 \
  --options '{"ps6": {"per_sm": 6}, "ps8": {"per_sm": 8}}' 2>&1 | grep -v -i warn | tail -8
