#!/usr/bin/env bash
# Twenty-fourth session, run f (the session's last device time): the CUDA tests this session added
# (tf32x3 folds over K = 32768, the staged epilogue, the thread-mode row cache), then the real
# KernelBench's 20-problem samples of levels 1 and 2 (seed 0, as in the twenty-third session's runs a
# and e) on this build, eager and torch.compile in the same process.
set -u
. bench/gpu_env.sh
timeout 60 python3 -m pytest -m cuda tests/test_cuda.py tests/test_wgmma.py -p no:cacheprovider -p no:warnings -n 14 -rf \
  -k "softmax_over_channels or long_k or odd_columns or 32k or float32_accuracy" 2>&1 | tee "$OUT/cuda_tests_new.log" | tail -2
timeout ${KB_S:-530} python3 bench/kernelbench.py third_party/KernelBench --sample 20 --sample-seed 0 --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --time-budget $(( ${KB_S:-530} - 40 )) --out "$OUT/real-kb.json" ${KB_ARGS:-} 2>&1 | grep -v -i warn | grep -v "^  " | tail -60
