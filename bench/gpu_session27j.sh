#!/usr/bin/env bash
# Twenty-seventh session, run j (not run: no device time left): flash-decoding (knob half_rows) computes only the tile's real rows' online step when a
# group has at most 8 rows (rows 8-15 padding): the decode CUDA tests and decode as 16 layers.
set -u
. bench/gpu_env.sh
export OUT
timeout 70 python3 -m pytest -m cuda tests/test_attention.py -k "decode" -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests_decode.log" | tail -2
timeout 150 python3 bench/attention.py --decode-layers 16 --prefetch-ab --out "$OUT/attention-decode-layers.json" 2>&1 | grep -v -i warn | grep decode-layers | cut -c1-330
