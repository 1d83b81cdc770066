#!/usr/bin/env bash
# Thirtieth session, run g: one 256-thread worker per SM (1.5-2% faster than the default in every
# run; tasks of 128 and 256 threads mixed in a worker) under compute-sanitizer racecheck and
# synccheck on the 2-layer model: the eighteenth session's 56-64 hazards of mixed sizes, again on
# the current dispatcher.
set -u
. bench/gpu_env.sh
export OUT
for tool in racecheck synccheck; do
  EMBER_MK_SAN_OPTIONS='{"per_sm": 1, "threads": 256}' EMBER_NVRTC_LINEINFO=1 EMBER_MK_TIMEOUT_S=600 timeout 140 \
    compute-sanitizer --tool $tool --print-limit 20 python3 bench/sanitize_megakernel.py > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -c 'Race reported' "$OUT/$tool.log") race reports; $(grep 'SUMMARY' "$OUT/$tool.log" | tail -1); $(grep -c 'equal' "$OUT/$tool.log") equal lines"
done
grep -m1 "uniform_threads" "$OUT/racecheck.log" | cut -c1-300
