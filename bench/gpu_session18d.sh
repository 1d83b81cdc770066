#!/usr/bin/env bash
# Eighteenth session: tf32x3 with a staging ring for MN-major operands; tests, variants, the step.
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest -m cuda tests/test_wgmma.py -q -p no:cacheprovider -p no:warnings -n 8 2>&1 | tee "$OUT/wgmma_tests.log" | grep -v -i warn | tail -6
timeout 300 python3 bench/f32_contractions.py --variants --only "${ONLY:-4096^3 tn,dW 1376,dX}" --out "$OUT/f32-contractions-variants.json" 2>&1 | grep -v -i warn | tee "$OUT/f32-contractions-variants.log"
