#!/usr/bin/env bash
# Twenty-seventh session, run d: the row operands' fragments read from shared memory per k step (knob
# afrag) on every scores kernel, and dK + dV merged at head dim 128 with it (EMBER_SIBLING_DEPTH=128).
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 bench/scores_profile.py --variants 4x64s2,4x64s2a,4x32s2a --out "$OUT/scores-profile.json" 2>&1 | grep -v -i warn | tail -3
EMBER_SIBLING_DEPTH=128 timeout 150 python3 bench/scores_profile.py --variants 4x64s2a,4x32s2a --out "$OUT/scores-profile-merged128.json" 2>&1 | grep -v -i warn | tail -3
EMBER_SIBLING_DEPTH=128 timeout 200 python3 -m pytest -m cuda tests/test_attention_backward.py -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests_backward_merged128.log" | tail -3
