#!/usr/bin/env bash
# Eighteenth session: tf32x3 wgmma (float32 accuracy on Hopper tensor cores) against the mma mode's
# 3xTF32 and cuBLAS; its correctness tests.
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest -m cuda tests/test_wgmma.py -q -p no:cacheprovider -p no:warnings -n 8 2>&1 | tee "$OUT/wgmma_tests.log" | tail -8
timeout 200 python3 bench/f32_contractions.py --out "$OUT/f32-contractions.json" 2>&1 | tee "$OUT/f32-contractions.log"
timeout 220 python3 bench/f32_contractions.py --variants --only "${ONLY:-4096^3 tn,dW 1376,dX}" --out "$OUT/f32-contractions-variants.json" 2>&1 | tee "$OUT/f32-contractions-variants.log"
