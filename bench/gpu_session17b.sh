#!/usr/bin/env bash
# Seventeenth session's second device call: megakernels with uniform 128-thread tasks (issue 22:
# racecheck was clean with them) fuzzed and timed against the default, and the serving load test
# at Llama-1B shapes after the step inputs became persistent buffers (issue 23: inter-token latency).
set -u
. bench/gpu_env.sh
timeout 330 python3 bench/megakernel.py --out "$OUT/megakernel.json" --fuzz-seeds 10 --fuzz-runs 100 --fuzz-threads 128 \
  --also-threads 128 2>&1 | tee "$OUT/megakernel.log" | grep -v "^fuzz" | tail -12
timeout 200 python3 bench/serve_load.py --shape 1b --device cuda --clients 1,8 --requests 16 --max-tokens 32 --max-batch 8 \
  --out "$OUT/serve-load.json" 2>&1 | tee "$OUT/serve-load.log" | tail -12
