#!/usr/bin/env bash
# Thirty-first session, run b: the megakernel's preload with branch-free weight loads (each slot's
# range read into registers once per task; both loads predicated: run a's per-load lookup measured
# 1.32-1.33 ms against 1.25) — its CUDA tests, 150 fuzzed runs with it, then 16 / 32 / 40 KB against
# the default, with relaxed polls, with the folded norms, with one 256-thread worker per SM.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q > "$OUT/mk_tests.log" 2>&1
echo "megakernel tests rc=$? $(grep -c '^FAILED' "$OUT/mk_tests.log") FAILED"; tail -3 "$OUT/mk_tests.log"
timeout 420 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 3 --fuzz-runs 50 \
  --fuzz-options '{"preload": 32768}' \
  --options '{"pre16": {"preload": 16384}, "pre32": {"preload": 32768}, "pre40": {"preload": 40960},
  "pre40_rp": {"preload": 40960, "relaxed_poll": true}, "relaxed_poll": {"relaxed_poll": true},
  "pre32_inline": {"preload": 32768, "inline_writes": true}, "pre40_s0": {"preload": 40960, "stream": 0},
  "ps1_t256_pre40": {"per_sm": 1, "threads": 256, "preload": 40960}, "fold_pre40_rp": {"fold_norms": true, "preload": 40960, "relaxed_poll": true}}' \
  2>&1 | grep -v -i warn | tail -1
