#!/usr/bin/env bash
# Thirtieth session, run f: the new default megakernel (sticky, evict, compact) under compute-sanitizer
# (racecheck, synccheck) on the 2-layer model; 1000 fuzzed runs of the default; a trace for the timeline.
set -u
. bench/gpu_env.sh
export OUT
for tool in racecheck synccheck; do
  EMBER_NVRTC_LINEINFO=1 EMBER_MK_TIMEOUT_S=600 timeout 150 compute-sanitizer --tool $tool python3 bench/sanitize_megakernel.py \
    > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -c 'Race reported' "$OUT/$tool.log") race reports; $(grep 'SUMMARY' "$OUT/$tool.log" | tail -1); $(grep -c 'equal' "$OUT/$tool.log") equal lines"
done
grep -m1 "uniform_threads" "$OUT/racecheck.log" | cut -c1-400
timeout 280 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 10 --fuzz-runs 100 \
  --trace-dir "$OUT" --options '{"ps1_t256": {"per_sm": 1, "threads": 256}}' 2>&1 | grep -v -i warn | tail -2
