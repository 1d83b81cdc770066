#!/usr/bin/env bash
# Issue 19 on the device: the wgmma tests, the contraction suite (default, variants), the CUDA tests.
# Usage on the device machine: bash bench/gpu_wgmma.sh [stage...]   (logs and JSON under $OUT)
set -u
. bench/gpu_env.sh
for stage in "${@:-tests quick}"; do
  case $stage in
    tests) timeout ${T_TESTS:-150} python3 -m pytest -m cuda tests/test_wgmma.py -q -p no:cacheprovider -p no:warnings -n 5 -x 2>&1 | tee "$OUT/wgmma_tests.log" | tail -15 ;;
    quick) timeout ${T_QUICK:-200} python3 bench/contractions.py --quick --out "$OUT/contractions-quick.json" 2>&1 | tee "$OUT/contractions-quick.log" ;;
    suite) timeout ${T_SUITE:-300} python3 bench/contractions.py --out "$OUT/contractions.json" 2>&1 | tee "$OUT/contractions.log" ;;
    variants) timeout ${T_VAR:-300} python3 bench/contractions.py --variants --only "${ONLY:-4096^3 nt}" --out "$OUT/contractions-variants.json" 2>&1 | tee "$OUT/contractions-variants.log" ;;
    knobs) timeout ${T_KNOBS:-400} python3 bench/contractions.py --knobs ${ONLY:+--only "$ONLY"} --out "$OUT/contractions-knobs.json" 2>&1 | tee "$OUT/contractions-knobs.log" ;;
    sanitize) for tool in memcheck racecheck; do timeout ${T_SAN:-150} compute-sanitizer --tool $tool python3 bench/sanitize_wgmma.py > "$OUT/sanitize-$tool.log" 2>&1; echo "compute-sanitizer $tool: exit $?"; tail -3 "$OUT/sanitize-$tool.log"; done ;;
    devtime) timeout ${T_DEV:-300} python3 bench/contractions.py --device-time ${KNOBS:+--knobs} ${ONLY:+--only "$ONLY"} --out "$OUT/contractions-devtime.json" 2>&1 | tee "$OUT/contractions-devtime.log" ;;
    suitegpu) timeout ${T_SG:-150} python3 bench/run.py gpu --no-compile --out "$OUT/suite.json" > "$OUT/suite.log" 2>&1; tail -16 "$OUT/suite.log" ;;
    search) timeout ${T_SEARCH:-420} python3 bench/contraction_search.py --time-limit ${SEARCH_LIMIT:-20} ${ONLY:+--only "$ONLY"} --out "$OUT/contraction-search.json" 2>&1 | grep -v -i warn | tee "$OUT/contraction-search.log" ;;
    cuda) timeout ${T_CUDA:-200} python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 2>&1 | tee "$OUT/cuda_tests.log" | tail -30 ;;
  esac
done
