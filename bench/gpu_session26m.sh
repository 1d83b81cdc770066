#!/usr/bin/env bash
# Twenty-sixth session, run m: per-key values (dV: the statistics read by the streamed index) once per key of a tile: the
# attention CUDA tests and the attention backward.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_attention_backward.py tests/test_attention.py -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests_attention.log" | tail -3
timeout 120 python3 bench/scores_profile.py --variants 4x64s2 --out "$OUT/scores-profile.json" 2>&1 | grep -v -i warn | tail -3
timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | tail -4
