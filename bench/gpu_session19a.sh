#!/usr/bin/env bash
# Nineteenth session, first run: EMBER_STAGE_PROLOGUES=1 (kernel/prologue.py) — the CUDA suite with it,
# BERT bf16 with and without it, the training step with and without it.
set -u
. bench/gpu_env.sh
EMBER_STAGE_PROLOGUES=1 timeout 260 python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 2>&1 | tee "$OUT/cuda_tests_stage_prologues.log" | tail -12
for sp in 0 1; do
  EMBER_STAGE_PROLOGUES=$sp timeout 150 python3 bench/gpu_models.py --only bert --dtypes bf16 --out "$OUT/gpu-models-bert-sp$sp.json" 2>&1 | grep -v -i warn | grep "^{" | cut -c1-600
done
