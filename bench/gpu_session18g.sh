#!/usr/bin/env bash
# Eighteenth session: issue 20's training size with torch.compile and a 200-step loss curve; CUDA suite.
set -u
. bench/gpu_env.sh
timeout 330 python3 bench/train.py --device cuda --only gpt6x512 --check-steps 200 --out "$OUT/train-gpt6x512.json" 2>&1 | grep -v -i warn | tee "$OUT/train-gpt6x512.log" | tail -5
timeout 240 python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 2>&1 | tee "$OUT/cuda_tests.log" | grep -E "FAILED|Error" | head -20; grep -c F "$OUT/cuda_tests.log"; grep -o "\[[ 0-9]*%\]" "$OUT/cuda_tests.log" | tail -1
