#!/usr/bin/env bash
# Eighteenth session: the training step with tf32x3 everywhere and column reductions split; CUDA suite.
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tee "$OUT/train.log" | tail -5
timeout 150 python3 bench/train_profile.py --device cuda --case gpt6x512 --out "$OUT/train-profile.json" 2>&1 | grep -v -i warn | tee "$OUT/train-profile.log" | head -14
timeout 220 python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 2>&1 | tee "$OUT/cuda_tests.log" | grep -E "FAILED|Error" | head -20; grep -c F "$OUT/cuda_tests.log"
