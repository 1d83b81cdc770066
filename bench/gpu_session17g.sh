#!/usr/bin/env bash
# Seventeenth session: the training step after sums of contractions are distributed (issue 20), with
# the host side of step() profiled.
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/train_profile.py --device cuda --host --out "$OUT/train-profile.json" 2>&1 | grep -v Warning | tee "$OUT/train-profile.log" | head -60
timeout 250 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train.json" 2>&1 | tee "$OUT/train.log" | tail -8
