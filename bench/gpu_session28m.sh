#!/usr/bin/env bash
# Twenty-eighth session, run m: the megakernel's new structure (one call per task, the task function
# looping over its blocks; tasks that share nothing without a barrier between blocks) under
# compute-sanitizer racecheck and synccheck on a 2-layer model (issue 22 item 3), with and without
# the per_sm / task_smem options' smaller tasks.
set -u
. bench/gpu_env.sh
export OUT
for tool in racecheck synccheck; do
  EMBER_NVRTC_LINEINFO=1 EMBER_MK_TIMEOUT_S=600 timeout 200 compute-sanitizer --tool $tool python3 bench/sanitize_megakernel.py \
    > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -c 'Race reported' "$OUT/$tool.log") race reports; $(grep 'SUMMARY' "$OUT/$tool.log" | tail -1); $(grep -c 'equal' "$OUT/$tool.log") equal lines"
done
grep -m1 "uniform_threads" "$OUT/racecheck.log" | cut -c1-300
