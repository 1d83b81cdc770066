#!/usr/bin/env bash
# Seventeenth session's device call: the megakernel's racecheck probes (issue 22) and the serving
# step's host time (issue 23). Usage on the device machine: bash bench/gpu_session17.sh (logs under $OUT)
set -u
. bench/gpu_env.sh
timeout 200 python3 -m pytest tests/test_megakernel_cuda.py tests/test_megakernel.py -q -p no:cacheprovider -p no:warnings 2>&1 | tee "$OUT/tests.log" | tail -3
run_race() {  # name, env...
  local name=$1; shift
  env "$@" EMBER_NVRTC_LINEINFO=1 EMBER_MK_TIMEOUT_S=600 timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool racecheck \
    python3 bench/sanitize_megakernel.py > "$OUT/racecheck-$name.log" 2>&1
  echo "racecheck $name rc=$? $(grep -c 'Race reported' "$OUT/racecheck-$name.log") reports; $(grep 'RACECHECK SUMMARY\|ERROR SUMMARY' "$OUT/racecheck-$name.log" | tail -1)"
}
run_race base X=1
run_race threads128 EMBER_MK_SAN_THREADS=128
run_race threads128-bar0 EMBER_MK_SAN_THREADS=128 EMBER_MK_BAR0_WHEN_FULL=1
run_race bar0 EMBER_MK_BAR0_WHEN_FULL=1
timeout 400 python3 bench/llm_host_step.py --out "$OUT/llm-host-step.json" 2>&1 | tee "$OUT/llm-host-step.log" | tail -6
