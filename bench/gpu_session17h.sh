#!/usr/bin/env bash
# Seventeenth session: the training step with its output ring (graph replays), its CUDA test, the benchmark.
set -u
. bench/gpu_env.sh
timeout 120 python3 -m pytest tests/test_train.py -m cuda -p no:cacheprovider -p no:warnings -rA 2>&1 | grep -E "PASSED|FAILED|Error|assert" | tail -8
timeout 200 python3 bench/train_profile.py --device cuda --host --out "$OUT/train-profile.json" 2>&1 | grep -v Warning | tee "$OUT/train-profile.log" | grep -A14 "step()"
timeout 250 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train.json" 2>&1 | tee "$OUT/train.log" | tail -4
