#!/usr/bin/env bash
# Twenty-sixth session, run d: attention's backward with its scores recomputed (kernel/scores.py,
# codegen/cuda_scores.py, mode `scores`): its CUDA tests against torch autograd, the attention
# backward against torch's flash / cuDNN backward, and the GPT training step (6 x 512, seq 256)
# whose attention backward it changes.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_attention_backward.py tests/test_attention.py tests/test_train.py -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests_scores.log" | tail -8
timeout 200 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | tail -4
EMBER_STREAM_SCORES=0 timeout 100 python3 bench/attention_backward.py --out "$OUT/attention-backward-materialised.json" 2>&1 | grep -v -i warn | tail -4
timeout 200 python3 bench/train.py --device cuda --only gpt6x512 --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tail -3
