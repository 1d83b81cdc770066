#!/usr/bin/env bash
# Seventeenth session: where issue 20's training step (gpt6x512) spends its time.
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/train_profile.py --device cuda --case gpt6x512 --top 30 --out "$OUT/train-profile-gpt.json" 2>&1 | grep -v Warning | tee "$OUT/train-profile-gpt.log" | head -45
