#!/usr/bin/env bash
# Twenty-sixth session, run k (the final build): the whole CUDA suite, the attention backward in scores
# mode with 64-key tiles at both head dims, the GPT training step.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -4
timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | tail -4
timeout 150 python3 bench/train.py --device cuda --only gpt6x512 --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tail -3
