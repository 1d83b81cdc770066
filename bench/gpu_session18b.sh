#!/usr/bin/env bash
# Eighteenth session: tf32x3 wgmma the default for K-major float32 contractions: the training step
# (issue 20), the whole CUDA test suite, the f32 contraction bench.
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tee "$OUT/train.log" | tail -8
timeout 200 python3 bench/train_profile.py --device cuda --case gpt6x512 --out "$OUT/train-profile.json" 2>&1 | grep -v -i warn | tee "$OUT/train-profile.log" | head -24
timeout 240 python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 2>&1 | tee "$OUT/cuda_tests.log" | tail -12
