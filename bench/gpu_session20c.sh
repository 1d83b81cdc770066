#!/usr/bin/env bash
# Twentieth session: graph simplifications x * 1 -> x and an exact widening narrowed back -> x
# (graph.py): the attention backward's dO operands become plain loads, so its dP and dV products
# take wgmma; the whole CUDA suite, the attention backward and the GPT training step again.
set -u
. bench/gpu_env.sh
timeout 120 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | cut -c1-300
timeout 200 python3 bench/train.py --device cuda --only gpt6x512 --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tail -3
timeout 280 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s\|Warn\|warn" | tail -15
