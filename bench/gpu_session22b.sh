#!/usr/bin/env bash
# Twenty-second session, second run: after chunk-major split-K partials, two-run rows and divided
# batch loops in TMA maps, and casts of sums staged for wgmma — the three real models in bf16, their
# profiles without programmatic dependent launch (PDL lets a kernel's wait count as its time), and
# the models' linear layers under tile overlays.
set -u
. bench/gpu_env.sh
timeout 400 python3 bench/gpu_models.py --dtypes bf16 --out "$OUT/gpu-models-bf16.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-400
EMBER_PDL=0 timeout 100 python3 bench/gpu_models.py --profile bert bf16 24 0 2>&1 | grep -v -i warn > "$OUT/bert-bf16-profile-nopdl.txt"; grep " us " "$OUT/bert-bf16-profile-nopdl.txt" | cut -c1-150
EMBER_PDL=0 timeout 150 python3 bench/gpu_models.py --profile llama bf16 24 0 2>&1 | grep -v -i warn > "$OUT/llama-bf16-profile-nopdl.txt"; grep " us " "$OUT/llama-bf16-profile-nopdl.txt" | cut -c1-150
