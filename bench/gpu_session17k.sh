#!/usr/bin/env bash
# Seventeenth session: the guarded mode on the GPU (an embedding's gradient) and the training steps.
set -u
. bench/gpu_env.sh
timeout 100 python3 -m pytest tests/test_c_guarded.py tests/test_train.py -m cuda -p no:cacheprovider -p no:warnings -rA 2>&1 | grep -E "PASSED|FAILED|^E " | tail -10
timeout 280 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train.json" 2>&1 | tee "$OUT/train.log" | tail -5
