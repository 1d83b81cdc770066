#!/usr/bin/env bash
# Thirty-first session, run a (prepared in the thirtieth, NOT RUN: no device time was left): the
# megakernel's option preload (each task's first weight bytes copied into the worker's shared memory
# by bulk copies before its wait; read from there by the task) — its CUDA tests first (two fuzz-like
# cases with seeds and sleeps), then 200 fuzzed runs with preload, then timings of 16 / 32 / 40 KB
# against the default, with the replicated norms, and with one 256-thread worker per SM; and
# relaxed_poll (relaxed polls, one acquire at the end); and --fold: the norms folded into their GEMVs
# with the norms' weights now multiplied into qkv / gate / up (build_step scale_weights), kernels and
# megakernel; and inline_writes (the KV cache writes run at the start of each attention task: two
# hand-offs fewer a layer). About 8 minutes of device time; if the bench times out, split the
# options over two calls.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q > "$OUT/mk_tests.log" 2>&1
echo "megakernel tests rc=$? $(grep -c '^FAILED' "$OUT/mk_tests.log") FAILED"; tail -3 "$OUT/mk_tests.log"
timeout 420 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 3 --fuzz-runs 50 --fold \
  --fuzz-options '{"preload": 32768, "inline_writes": true}' \
  --options '{"pre16": {"preload": 16384}, "pre32": {"preload": 32768}, "pre40": {"preload": 40960},
  "pre32_rep": {"preload": 32768, "replicate": true}, "relaxed_poll": {"relaxed_poll": true},
  "inline": {"inline_writes": true}, "inline_pre32": {"inline_writes": true, "preload": 32768},
  "ps1_t256": {"per_sm": 1, "threads": 256}, "ps1_t256_pre40": {"per_sm": 1, "threads": 256, "preload": 40960}}' \
  2>&1 | grep -v -i warn | tail -1
