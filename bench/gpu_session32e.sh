#!/usr/bin/env bash
# Thirty-second session, run e (the final build's decode defaults: gathered combine, early keys with
# the kernel before triggering after its key loop, head dim 64 over 8 warps): the whole CUDA suite;
# the 16-layer protocol's defaults; the Llama-1B decode step with head dim 64's 4-warp schedule
# (EMBER_DECODE_NARROW_WARPS=0) and the new one, kernels and megakernel.
set -u
. bench/gpu_env.sh
export OUT
timeout 300 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
timeout 120 python3 bench/attention.py --decode-layers 16 --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128;1,8,4,32768,128" \
  --out "$OUT/attention-decode.json" 2>&1 | grep '^decode-layers' | cut -c1-400
EMBER_DECODE_NARROW_WARPS=0 EMBER_CACHE_DIR=/tmp/ember_cache_nw0 timeout 150 python3 bench/megakernel.py --out "$OUT/megakernel-nw0.json" \
  --contexts 1024 --fuzz-seeds 0 2>&1 | grep -v -i warn | tail -1
timeout 150 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 0 2>&1 | grep -v -i warn | tail -1
