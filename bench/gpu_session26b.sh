#!/usr/bin/env bash
# Twenty-sixth session, run b: the whole CUDA suite on this build (flash-decoding's splits, SDPA with a
# mask streamed), decode attention as 16 layers with the new default (a long cache split over 8
# clusters of 2), and SDPA with a padding mask against torch's SDPA.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -4
timeout 120 python3 bench/attention.py --masked-only --out "$OUT/attention-masked.json" 2>&1 | grep -v -i warn | tail -4
timeout 150 python3 bench/attention.py --decode-layers 16 --out "$OUT/attention-decode-layers.json" 2>&1 | grep -v -i warn | tail -5
