#!/usr/bin/env bash
# Eighteenth session: split-K chunk count for long k loops (weight gradients), and the step's host time.
set -u
. bench/gpu_env.sh
for c in 4 8 16; do timeout 100 python3 bench/f32_contractions.py --only "dW" --long-chunks $c --out "$OUT/f32-dW-chunks$c.json" 2>&1 | grep -v -i warn | sed "s/^/[chunks $c] /"; done
timeout 200 python3 bench/train_profile.py --device cuda --case gpt6x512 --host --out "$OUT/train-profile-host.json" 2>&1 | grep -v -i warn | tee "$OUT/train-profile-host.log" | grep -A40 "step()" | head -50
