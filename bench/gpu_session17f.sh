#!/usr/bin/env bash
# Seventeenth session: where the compiled training step's time goes on the GPU (issue 20).
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/train_profile.py --device cuda --out "$OUT/train-profile.json" 2>&1 | tee "$OUT/train-profile.log" | head -40
timeout 300 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train.json" 2>&1 | tee "$OUT/train.log" | tail -12
