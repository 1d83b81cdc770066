#!/usr/bin/env bash
# Forty-fourth session: the split's lag under tf32x3's RS form with cp.async copies of A (44c: lag 2 at 5 stages
# 479 us, 2.04x eager; the default lag stages - 2 = 3, 567): lag 0-2 over 3-5 stages, persistent or not.
set -u
. bench/gpu_env.sh
export OUT
S='"swap": true, "rs": true, "cpasync": true, "BM": 128, "BN": 96'
timeout 300 python3 bench/f32_conv.py --cases 0 --out "$OUT/seed-lag.json" --overlays "[
 {$S, \"stages\": 5, \"lag\": 2}, {$S, \"stages\": 5, \"lag\": 1}, {$S, \"stages\": 5, \"lag\": 0},
 {$S, \"stages\": 4, \"lag\": 1}, {$S, \"stages\": 4, \"lag\": 0}, {$S, \"stages\": 3, \"lag\": 0},
 {$S, \"stages\": 5, \"lag\": 1, \"persistent\": true}, {$S, \"stages\": 5, \"lag\": 2, \"persistent\": true},
 {$S, \"stages\": 5, \"lag\": 1, \"overlap\": false}, {$S, \"stages\": 5, \"lag\": 2, \"overlap\": false},
 {\"swap\": true, \"rs\": true, \"BM\": 128, \"BN\": 96, \"stages\": 5, \"lag\": 1},
 {\"swap\": true, \"rs\": true, \"BM\": 128, \"BN\": 96, \"stages\": 5, \"lag\": 2}
]" 2>&1 | grep -v -i warn | tail -14
