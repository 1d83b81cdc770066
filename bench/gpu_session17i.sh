#!/usr/bin/env bash
# Seventeenth session: issue 20's training-step size (6 layers, d 512, seq 256, batch 32), against
# torch eager and a CUDA-graphed eager step; then again with torch.compile if time allows.
set -u
. bench/gpu_env.sh
timeout 150 python3 bench/train.py --device cuda --only gpt6x512 --no-torch-compile --out "$OUT/train-gpt.json" 2>&1 | tee "$OUT/train-gpt.log" | tail -3
timeout 170 python3 bench/train.py --device cuda --only gpt6x512 --reps 10 --out "$OUT/train-gpt-compile.json" 2>&1 | tee "$OUT/train-gpt-compile.log" | tail -3
