#!/usr/bin/env bash
# Forty-fourth session: tf32x3's RS default (EMBER_WGMMA_RS_X3, codegen/cuda_wgmma_default.py rs_x3_default): its CUDA
# tests, the seed-000 conv's default, and a float32 3x3 conv 64 -> 64 (its input an im2col walk: the default stays the
# shared-memory form) against the RS tiles over its gathered input.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -q -m cuda -p no:warnings -o addopts="" tests/test_wgmma_rs_x3.py tests/test_wgmma_rs.py 2>&1 | tail -4
S='"rs": true, "cpasync": true, "lag": 1'
timeout 300 python3 bench/f32_conv.py --cases 0,1 --out "$OUT/rs-x3-default.json" --overlays "[
 {$S, \"BM\": 128, \"BN\": 64, \"stages\": 5, \"persistent\": true}, {$S, \"BM\": 128, \"BN\": 64, \"stages\": 5},
 {\"rs\": true, \"lag\": 1, \"BM\": 128, \"BN\": 64, \"stages\": 5, \"persistent\": true},
 {$S, \"BM\": 128, \"BN\": 64, \"stages\": 5, \"persistent\": true, \"swap\": true}
]" 2>&1 | grep -v -i warn | tail -14
