#!/usr/bin/env bash
# Twenty-seventh session, run j (not run: no device time was left; the next session's first run):
# knob half_rows (flash-decoding with at most 8 rows skips the padding rows' X and online step) — the
# decode CUDA tests (its cases included) and decode as 16 layers with it and without; the attention
# backward CUDA tests with o and the gradients in one program (o merged with dQ: never run on a GPU)
# and the backward bench, whose `ember_forward_backward_us` times that program against torch's
# forward + backward.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_attention.py tests/test_attention_backward.py -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests_attention.log" | tail -2
timeout 150 python3 bench/attention.py --decode-layers 16 --prefetch-ab --out "$OUT/attention-decode-layers.json" 2>&1 | grep -v -i warn | grep -E "decode-layers|half_rows|prefetch0" | cut -c1-330
timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | grep shape | cut -c1-400
