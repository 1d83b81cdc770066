#!/usr/bin/env bash
# Eighteenth session: rule 7b (the residual stream materialised) A/B on the training step.
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tee "$OUT/train.log" | tail -4
EMBER_REREAD_MIN=0 timeout 200 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train-no7b.json" 2>&1 | grep -v -i warn | tee "$OUT/train-no7b.log" | tail -4
timeout 150 python3 bench/train_profile.py --device cuda --case gpt6x512 --out "$OUT/train-profile.json" 2>&1 | grep -v -i warn | tee "$OUT/train-profile.log" | head -12
