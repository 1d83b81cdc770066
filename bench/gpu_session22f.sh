#!/usr/bin/env bash
# Twenty-second session, sixth run: the three real models in bf16 with the staged (shared-memory)
# wgmma epilogue and without (EMBER_WGMMA_SEPI=0, separate program caches), then the default again
# (torch.compile's timings moved 4.1-6.6 ms between runs of this session).
set -u
. bench/gpu_env.sh
timeout 250 python3 bench/gpu_models.py --dtypes bf16 --out "$OUT/gpu-models-bf16-sepi1.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-420
EMBER_CACHE_DIR=/tmp/ember_cache_sepi0 EMBER_WGMMA_SEPI=0 timeout 150 python3 bench/gpu_models.py --dtypes bf16 --no-torch-compile --out "$OUT/gpu-models-bf16-sepi0.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-300
timeout 180 python3 bench/gpu_models.py --dtypes bf16 --out "$OUT/gpu-models-bf16-sepi1-repeat.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-420
