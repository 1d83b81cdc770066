#!/usr/bin/env bash
# Thirty-first session, run f: flash-decoding's keys-major products now the default at every head
# dim (Llama-1B's 64 too, so the decode step and its megakernel's attention tasks take them): the
# megakernel / LLM / decode CUDA tests, then the Llama-1B decode step (kernels and megakernel) with
# kt off (EMBER_DECODE_KT=0, its own program cache) and on, in one machine session.
set -u
. bench/gpu_env.sh
export OUT
timeout 220 python3 -m pytest -m cuda tests/ -k "megakernel or llm or decode or attention" -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
EMBER_DECODE_KT=0 EMBER_CACHE_DIR=/tmp/ember_cache_kt0 timeout 200 python3 bench/megakernel.py --out "$OUT/megakernel-kt0.json" --contexts 1024 --fuzz-seeds 0 \
  2>&1 | grep -v -i warn | tail -1
timeout 240 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 2 --fuzz-runs 50 \
  --options '{"rp": {"relaxed_poll": true}}' 2>&1 | grep -v -i warn | tail -1
