#!/usr/bin/env bash
# Twenty-sixth session, run e: the scores kernels with ex2.approx, unrounded scores and unguarded
# full tiles: their CUDA tests, each kernel's time / registers / spills and the warps x BN variants
# (bench/scores_profile.py), the attention backward against torch's.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_attention_backward.py -p no:cacheprovider -p no:warnings -n 4 -rf -q 2>&1 | tee "$OUT/cuda_tests_scores.log" | tail -3
timeout 240 python3 bench/scores_profile.py --out "$OUT/scores-profile.json" 2>&1 | grep -v -i warn | tail -4
timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | tail -4
