#!/usr/bin/env bash
# Eighteenth session: GEMM operand prologues materialised on wgmma targets; BERT, training, CUDA suite.
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/gpu_models.py --only bert --out "$OUT/gpu-models-bert.json" 2>&1 | grep -v -i warn | grep "^{" | cut -c1-500
timeout 150 python3 bench/train.py --device cuda --no-torch-compile --only gpt6x512 --out "$OUT/train.json" 2>&1 | grep -v -i warn | tail -2
timeout 200 python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 2>&1 | tee "$OUT/cuda_tests.log" | grep -E "FAILED|Error" | head -20; grep -c F "$OUT/cuda_tests.log"; grep -o "\[[ 0-9]*%\]" "$OUT/cuda_tests.log" | tail -1
