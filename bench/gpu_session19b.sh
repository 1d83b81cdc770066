#!/usr/bin/env bash
# Nineteenth session, second run: the training step with and without EMBER_STAGE_PROLOGUES=1.
set -u
. bench/gpu_env.sh
for sp in 0 1; do
  EMBER_STAGE_PROLOGUES=$sp timeout 200 python3 bench/train.py --device cuda --no-torch-compile --only gpt6x512 --out "$OUT/train-sp$sp.json" 2>&1 | grep -v -i warn | tee "$OUT/train-sp$sp.log" | tail -4
done
