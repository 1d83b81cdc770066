#!/usr/bin/env bash
# Forty-fourth session: tf32x3's RS form (codegen/cuda_wgmma_rs.py: A raw in shared memory, split into hi / lo
# registers by the consumers; BN 96 allowed). Its CUDA tests (and the TF32 RS ones: the register split is new
# there too), then the seed-000 conv (default 525 us on the H200, 1.86x eager; 2x is ~490) with the RS tiles
# swapped (pixels on the rows, 96 channels on a 96-wide tile), then float32 GEMMs with the RS form.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -q -m cuda -p no:warnings -o addopts="" tests/test_wgmma_rs_x3.py tests/test_wgmma_rs.py 2>&1 | tail -6
S='"swap": true, "rs": true'
timeout 200 python3 bench/f32_conv.py --cases 0 --out "$OUT/seed-rs.json" --overlays "[
 {$S, \"BM\": 128, \"BN\": 96, \"stages\": 3}, {$S, \"BM\": 128, \"BN\": 96, \"stages\": 5},
 {$S, \"BM\": 128, \"BN\": 96, \"stages\": 4, \"persistent\": true}, {$S, \"BM\": 128, \"BN\": 96, \"stages\": 5, \"persistent\": true},
 {$S, \"BM\": 128, \"BN\": 96, \"stages\": 5, \"overlap\": false}, {$S, \"BM\": 64, \"BN\": 96, \"stages\": 7},
 {$S, \"BM\": 128, \"BN\": 128, \"stages\": 4}, {\"swap\": true, \"BM\": 128, \"BN\": 96, \"stages\": 3},
 {\"rs\": true, \"BM\": 128, \"BN\": 256, \"stages\": 2, \"overlap\": false}, {$S, \"BM\": 128, \"BN\": 96, \"stages\": 5, \"hoist\": false}
]" 2>&1 | grep -v -i warn | tail -14
timeout 260 python3 bench/f32_contractions.py --only "4096^3 nt,4096^3 nn,fwd up,dX" --out "$OUT/f32-rs.json" --overlays '[
 {"BM": 128, "BN": 128, "stages": 4, "rs": true, "overlap": false}, {"BM": 128, "BN": 64, "stages": 6, "rs": true},
 {"BM": 128, "BN": 128, "stages": 4, "rs": true, "promote": 0},
 {"BM": 128, "BN": 128, "stages": 4, "rs": true, "swap": true, "overlap": false}, {"BM": 128, "BN": 64, "stages": 6, "rs": true, "swap": true}
]' 2>&1 | grep -v -i warn | tail -40
