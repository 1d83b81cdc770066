#!/usr/bin/env bash
# Thirtieth session, run h: run g's racecheck again with EMBER_MK_BAR0_WHEN_FULL=1 (a task over every
# thread of the worker syncs on barrier 0, not `barrier.sync 1, 256`): whether racecheck's reports
# of the 256-thread form are about the named barrier.
set -u
. bench/gpu_env.sh
export OUT
EMBER_MK_BAR0_WHEN_FULL=1 EMBER_MK_SAN_OPTIONS='{"per_sm": 1, "threads": 256}' EMBER_NVRTC_LINEINFO=1 EMBER_MK_TIMEOUT_S=600 \
  timeout 140 compute-sanitizer --tool racecheck --print-limit 20 python3 bench/sanitize_megakernel.py > "$OUT/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -c 'Race reported' "$OUT/racecheck.log") race reports; $(grep 'SUMMARY' "$OUT/racecheck.log" | tail -1); $(grep -c 'equal' "$OUT/racecheck.log") equal lines"
grep -A1 "Race reported" "$OUT/racecheck.log" | grep -o "cu:[0-9]*" | sort | uniq -c | head
