#!/usr/bin/env bash
# Nineteenth session: batch-invariant serving — the CUDA suite (flash kernels' key loops now start at
# the mask's first key), then the bf16 load test with --batch-invariant.
set -u
. bench/gpu_env.sh
EXTRA_VERSIONS="transformers uvicorn httpx" true
timeout 250 python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -25
timeout 320 python3 bench/serve_load.py --shape 1b --device cuda --clients 1,8 --requests 16 --max-tokens 32 --max-batch 8 \
  --batch-invariant --out "$OUT/serve-load-bf16-invariant.json" 2>&1 | grep -v -i warn | tee "$OUT/serve-load-invariant.log" | tail -8
