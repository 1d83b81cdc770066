#!/usr/bin/env bash
# Eighteenth session: split-K for long k loops over a mostly empty second wave (weight gradients),
# the f32 contraction bench, the training step and its profile.
set -u
. bench/gpu_env.sh
timeout 150 python3 bench/f32_contractions.py --out "$OUT/f32-contractions.json" 2>&1 | grep -v -i warn | tee "$OUT/f32-contractions.log"
timeout 200 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tee "$OUT/train.log" | tail -5
timeout 150 python3 bench/train_profile.py --device cuda --case gpt6x512 --out "$OUT/train-profile.json" 2>&1 | grep -v -i warn | tee "$OUT/train-profile.log" | head -12
