#!/usr/bin/env bash
# Thirtieth session, run c: two megakernel options built after run b's stall samples — sticky (a
# small task function runs on the same workers every layer: its code stays in their instruction
# caches; ncu showed 25-43% of those functions' samples waiting for instructions) and evict (the
# weight stream comes into L2 evict-last, the weight loads leave evict-first, so a longer stream
# window is not evicted before it is read) with windows of 32, 64 and 128 KB; the megakernel CUDA
# tests first, and the fuzzer over sticky + evict.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q > "$OUT/mk_tests.log" 2>&1
echo "megakernel tests rc=$? $(grep -c '^FAILED' "$OUT/mk_tests.log") FAILED"; tail -2 "$OUT/mk_tests.log"
timeout 420 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 4 --fuzz-runs 50 \
  --fuzz-options '{"sticky": true, "evict": true, "stream": 65536}' \
  --options '{"sticky": {"sticky": true}, "evict": {"evict": true}, "evict_s64": {"evict": true, "stream": 65536},
  "evict_s128": {"evict": true, "stream": 131072}, "sticky_evict_s64": {"sticky": true, "evict": true, "stream": 65536},
  "ps1_t256_sticky": {"per_sm": 1, "threads": 256, "sticky": true}}' \
  2>&1 | grep -v -i warn | tail -1
