#!/usr/bin/env bash
# Seventeenth session's last device call: the megakernel's new default (128-thread tasks) under its
# CUDA tests, racecheck and synccheck (issue 22), and the float32 serving load test (issue 23: every
# answer must equal its single-request run; checks the persistent step inputs under concurrency).
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -rA 2>&1 | tee "$OUT/tests.log" | grep -E "passed|failed|PASSED|FAILED" | tail -12
for tool in racecheck synccheck; do
  EMBER_NVRTC_LINEINFO=1 EMBER_MK_TIMEOUT_S=600 timeout 200 compute-sanitizer --tool $tool python3 bench/sanitize_megakernel.py \
    > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -c 'Race reported' "$OUT/$tool.log") race reports; $(grep 'SUMMARY' "$OUT/$tool.log" | tail -1); $(grep -c 'equal' "$OUT/$tool.log") equal lines"
done
grep -m1 "uniform_threads" "$OUT/racecheck.log" | cut -c1-300
timeout 300 python3 bench/serve_load.py --shape 1b --device cuda --dtype float32 --clients 1,8 --requests 16 --max-tokens 32 \
  --max-batch 8 --out "$OUT/serve-load-f32.json" 2>&1 | tee "$OUT/serve-load-f32.log" | tail -5
