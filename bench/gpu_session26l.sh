#!/usr/bin/env bash
# Twenty-sixth session, run l: a score kernel's value rounded to 16 bits twice rounds once: the
# attention CUDA tests and the attention backward.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_attention_backward.py tests/test_attention.py -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests_attention.log" | tail -3
timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | tail -4
