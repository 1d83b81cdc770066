#!/usr/bin/env bash
# Twenty-fifth session, runs c and d: the rest of the real KernelBench's level-3 sample (20 problems,
# seed 0) on this build, resumed into run b's JSON (39_GRU and 40_GRUHidden measured there).
# KB_ONLY picks the problems of one call: run c the fourteen non-recurrent ones, run d 36 and 42.
set -u
. bench/gpu_env.sh
cp bench/results/gpu-session25-2026-11-27/${KB_FROM:-b}/real-kb-l3.json "$OUT/real-kb-l3.json"
timeout ${KB_S:-560} python3 bench/kernelbench.py third_party/KernelBench --sample 20 --sample-seed 0 --level 3 --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --only "$KB_ONLY" --time-budget $(( ${KB_S:-560} - 90 )) --resume \
  --out "$OUT/real-kb-l3.json" ${KB_ARGS:-} 2>&1 | grep -v -i warn | grep -v "^  " | tail -28
