#!/usr/bin/env bash
# Twenty-fifth session, run b: the whole CUDA suite on this build (commutative operands in one
# buffer-blind order: every kernel's source changed), then the level-3 sample's recurrent problems at
# their full 512 steps (one elementwise kernel a step where the stacked output fragmented them;
# kernels equal under renaming rendered and compiled once), into the level-3 JSON that run c resumes.
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -4
timeout ${KB_S:-420} python3 bench/kernelbench.py third_party/KernelBench --sample 20 --sample-seed 0 --level 3 --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --only ${KB_ONLY:-36_LSTMHn,39_GRU,40_GRUHidden,42_GRUBidirectionalHidden} --time-budget $(( ${KB_S:-420} - 60 )) \
  --out "$OUT/real-kb-l3.json" ${KB_ARGS:-} 2>&1 | grep -v -i warn | grep -v "^  " | tail -14
