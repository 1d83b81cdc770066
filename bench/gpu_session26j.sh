#!/usr/bin/env bash
# Twenty-sixth session, run j: the tail reads the score tile it shares, per-row values hoisted out of the key loop: CUDA tests, the
# per-kernel times, the attention backward, the GPT training step.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_attention_backward.py tests/test_train.py -p no:cacheprovider -p no:warnings -n 4 -rf -q 2>&1 | tee "$OUT/cuda_tests_scores.log" | tail -3
timeout 300 python3 bench/scores_profile.py --variants 4x64s2,4x32s2 --out "$OUT/scores-profile.json" 2>&1 | grep -v -i warn | tail -4
timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | tail -4
timeout 150 python3 bench/train.py --device cuda --only gpt6x512 --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tail -3
