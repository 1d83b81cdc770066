#!/usr/bin/env bash
# Thirty-second session, run k: the final build — the whole CUDA suite, and the 16-layer defaults.
set -u
. bench/gpu_env.sh
export OUT
timeout 300 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
timeout 120 python3 bench/attention.py --decode-layers 16 --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128;1,8,4,32768,128" \
  --out "$OUT/attention-decode.json" 2>&1 | grep '^decode-layers' | cut -c1-330
