#!/usr/bin/env bash
# Twenty-sixth session, run g: the scores kernels' ring of S slots (knob `stages`): CUDA tests and the
# per-kernel times under warps x BN x stages variants.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_attention_backward.py -p no:cacheprovider -p no:warnings -n 4 -rf -q 2>&1 | tee "$OUT/cuda_tests_scores.log" | tail -3
timeout 300 python3 bench/scores_profile.py --out "$OUT/scores-profile.json" 2>&1 | grep -v -i warn | tail -4
