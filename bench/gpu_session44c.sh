#!/usr/bin/env bash
# Forty-fourth session: the seed-000 conv's producer waits on its gathered loads (ncu, 44b: L1TEX scoreboard 63% of
# stalls, tensor pipe 45%): tf32x3's RS form with A's chunks as cp.async copies (raw: no split), the split of B
# waiting for them `lag` slices later. CUDA tests first, then the tiles.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -q -m cuda -p no:warnings -o addopts="" tests/test_wgmma_rs_x3.py 2>&1 | tail -4
S='"swap": true, "rs": true, "cpasync": true'
timeout 300 python3 bench/f32_conv.py --cases 0 --out "$OUT/seed-cpasync.json" --overlays "[
 {$S, \"BM\": 128, \"BN\": 96, \"stages\": 5}, {$S, \"BM\": 128, \"BN\": 96, \"stages\": 4},
 {$S, \"BM\": 128, \"BN\": 96, \"stages\": 5, \"persistent\": true}, {$S, \"BM\": 128, \"BN\": 96, \"stages\": 4, \"persistent\": true},
 {$S, \"BM\": 128, \"BN\": 96, \"stages\": 5, \"hoist\": false}, {$S, \"BM\": 128, \"BN\": 128, \"stages\": 4},
 {$S, \"BM\": 128, \"BN\": 96, \"stages\": 5, \"lag\": 2}, {$S, \"BM\": 128, \"BN\": 96, \"stages\": 5, \"overlap\": false, \"lag\": 4},
 {$S, \"BM\": 64, \"BN\": 96, \"stages\": 7}, {$S, \"BM\": 128, \"BN\": 64, \"stages\": 6}
]" 2>&1 | grep -v -i warn | tail -14
