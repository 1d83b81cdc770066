#!/usr/bin/env bash
# Twenty-seventh session, run c: the softmax's max, sum and D = sum P dP as one online kernel (a chain
# of row statistics merged, kernel/siblings.py chain=True, kernel/scores.py online_stats), with dK + dV
# merged at head dim 64: the attention CUDA tests, the backward, per kernel, and apart for comparison.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/test_attention_backward.py tests/test_attention.py tests/test_train.py -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests_attention.log" | tail -3
timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | grep shape | cut -c1-200
EMBER_MERGE_SIBLINGS=0 timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward-apart.json" 2>&1 | grep -v -i warn | grep shape | cut -c1-200
timeout 120 python3 bench/scores_profile.py --variants 4x64s2,4x32s2,4x64s3 --out "$OUT/scores-profile.json" 2>&1 | grep -v -i warn | tail -3
