#!/usr/bin/env bash
# The megakernel's GPU checks in one device call (issue 22): its CUDA tests, compute-sanitizer racecheck
# and synccheck over a 2-layer model, the schedule fuzzer (1000 runs) and the timings.
# Usage on the device machine: bash bench/gpu_megakernel.sh   (logs and JSON under $OUT)
set -u
. bench/gpu_env.sh
timeout ${TEST_TIMEOUT:-200} python3 -m pytest tests/test_megakernel_cuda.py tests/test_megakernel.py -q -p no:cacheprovider -p no:warnings 2>&1 | tee "$OUT/tests.log" | tail -3
for tool in racecheck synccheck; do
  EMBER_NVRTC_LINEINFO=1 EMBER_MK_TIMEOUT_S=600 timeout ${SAN_TIMEOUT:-300} compute-sanitizer --tool $tool \
    python3 bench/sanitize_megakernel.py > "$OUT/$tool.log" 2>&1; echo "$tool rc=$?"; tail -4 "$OUT/$tool.log"
done
timeout ${BENCH_TIMEOUT:-400} python3 bench/megakernel.py --out "$OUT/megakernel.json" --fuzz-seeds 10 --fuzz-runs 100 ${MK_ARGS:-} 2>&1 | tee "$OUT/megakernel.log" | tail -30
