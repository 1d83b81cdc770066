#!/usr/bin/env bash
# Thirtieth session, run e: the new defaults (sticky, evict, compact) and the idle stream (option
# idle: up to that many bytes past the window, a piece at a time while the worker waits), on one
# and two workers per SM, and the replicated norms with the new defaults; megakernel CUDA tests
# first; the fuzzer over idle.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q > "$OUT/mk_tests.log" 2>&1
echo "megakernel tests rc=$? $(grep -c '^FAILED' "$OUT/mk_tests.log") FAILED"; tail -2 "$OUT/mk_tests.log"
timeout 420 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 4 --fuzz-runs 50 \
  --fuzz-options '{"idle": 131072}' \
  --options '{"idle64": {"idle": 65536}, "idle128": {"idle": 131072}, "idle128_ns100": {"idle": 131072, "idle_ns": 100},
  "idle256": {"idle": 262144}, "rep": {"replicate": true}, "ps1_t256": {"per_sm": 1, "threads": 256},
  "ps1_t256_idle128": {"per_sm": 1, "threads": 256, "idle": 131072}}' \
  2>&1 | grep -v -i warn | tail -1
