#!/usr/bin/env bash
# Eighteenth session, first GPU run: tf32x3 wgmma (float32 accuracy on Hopper tensor cores) against
# the mma mode's 3xTF32 and cuBLAS; its correctness tests; the racecheck probe of the megakernel.
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest -m cuda tests/test_wgmma.py -q -p no:cacheprovider -p no:warnings -n 8 2>&1 | tee "$OUT/wgmma_tests.log" | tail -8
timeout 200 python3 bench/f32_contractions.py --out "$OUT/f32-contractions.json" 2>&1 | tee "$OUT/f32-contractions.log"
timeout 200 python3 bench/f32_contractions.py --variants --only "${ONLY:-4096^3 nt,dW 1376}" --out "$OUT/f32-contractions-variants.json" 2>&1 | tee "$OUT/f32-contractions-variants.log"
timeout 60 compute-sanitizer --tool racecheck python3 bench/racecheck_named_barrier.py > "$OUT/racecheck-probe.log" 2>&1; echo "racecheck probe exit $?"; tail -5 "$OUT/racecheck-probe.log"
