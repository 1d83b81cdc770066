#!/usr/bin/env bash
# Twenty-fifth session, run f (the last device time): the final build's batched-product CUDA tests
# and the level-3 sample's 49_Mamba2ReturnFinalState, the one problem of the sample whose kernels the
# final schedule change touches (checked offline: /tmp/newpath.py in the session's notes).
set -u
. bench/gpu_env.sh
timeout 60 python3 -m pytest -m cuda tests/test_cuda.py -k "batched_small" -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -2
timeout 150 python3 bench/kernelbench.py third_party/KernelBench --level 3 --only 49_Mamba2ReturnFinal --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --out "$OUT/real-kb-l3-49.json" 2>&1 | grep -v -i warn | grep -v "^  " | tail -6
