#!/usr/bin/env bash
# Nineteenth session: the CUDA target's finer x @ W GEMV split (kernel/split.py gemv_*) — the GEMV
# cases of the contraction bench (graph replays), the training step (its norms' weight gradients
# split the same way), the CUDA tests of GEMVs and splits.
set -u
. bench/gpu_env.sh
timeout 150 python3 bench/contractions.py --device-time --only "gemv" --out "$OUT/contractions-gemv.json" 2>&1 | grep -v -i warn | grep "gemv" | cut -c1-160
timeout 200 python3 bench/train.py --device cuda --no-torch-compile --only gpt6x512 --out "$OUT/train.json" 2>&1 | grep -v -i warn | tail -3
timeout 200 python3 -m pytest -m cuda tests/ -k "gemv or split or matmul or linear or reduce" -q -p no:cacheprovider -p no:warnings -n 8 2>&1 | tee "$OUT/cuda_tests.log" | tail -2
