#!/usr/bin/env bash
# Thirtieth session, run d: the compact dispatcher (option compact: one case per task function,
# buffers and grids from constant tables) alone and with run c's sticky + evict, on one and two
# workers per SM; the megakernel CUDA tests first; the fuzzer over compact + sticky + evict.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q > "$OUT/mk_tests.log" 2>&1
echo "megakernel tests rc=$? $(grep -c '^FAILED' "$OUT/mk_tests.log") FAILED"; tail -2 "$OUT/mk_tests.log"
timeout 400 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 4 --fuzz-runs 50 \
  --fuzz-options '{"sticky": true, "evict": true, "compact": true}' \
  --options '{"compact": {"compact": true}, "sticky_evict": {"sticky": true, "evict": true},
  "sticky_evict_compact": {"sticky": true, "evict": true, "compact": true},
  "ps1_t256_sticky_evict_compact": {"per_sm": 1, "threads": 256, "sticky": true, "evict": true, "compact": true}}' \
  2>&1 | grep -v -i warn | tail -1
