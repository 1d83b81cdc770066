#!/usr/bin/env bash
# Twenty-seventh session, run b: dK and dV of attention's backward as one kernel (kernel/siblings.py,
# head dim 64): the attention CUDA tests, the backward merged and apart (EMBER_MERGE_SIBLINGS=0), per
# kernel; decode's kv_prefetch capped at 16 / 64 KB a block.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/test_attention_backward.py tests/test_attention.py -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests_attention.log" | tail -3
timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | tail -4
EMBER_MERGE_SIBLINGS=0 timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward-apart.json" 2>&1 | grep -v -i warn | tail -4
timeout 120 python3 bench/scores_profile.py --variants 4x64s2,4x32s2 --out "$OUT/scores-profile.json" 2>&1 | grep -v -i warn | tail -3
timeout 200 python3 bench/attention.py --decode-layers 16 --prefetch-ab --out "$OUT/attention-decode-layers-prefetch.json" 2>&1 | grep -v -i warn | grep kv_prefetch
