#!/usr/bin/env bash
# For the forty-first session, after 41a: level-1 problems still under eager whose cause is a tile choice
# (each untimed as an overlay; the wgmma knob `swap`'s CUDA tests first): 04_matmul_irregular (tf32x3 1031 x 2053 x 3136 in 64 x 64 tiles, 0.80x eager:
# the cost model's 4096^3 rates pick the smallest tile by wave count) and 38_conv3d (TF32, 32 output channels:
# M = 32, so `mma`; wgmma's 64-row tile half empty but im2col-fed, or `swap`: pixels on 128 rows, 32 columns); then
# ResNet-50's residual convs with more of the staged walk's loads in flight. The seed conv's space: 41c.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_wgmma_swap.py -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
echo "swap cuda tests rc=$? $(grep -a -c '^FAILED' "$OUT/tests.log") FAILED"; grep -a '^FAILED' "$OUT/tests.log" | head -5; tail -1 "$OUT/tests.log"
timeout 150 python3 bench/knob_sweep.py kernelbench/level1/04_matmul_irregular.py --precision torch --out "$OUT/ks04.json" \
  --knobs '[{"_on": "wgmma", "BM": 128, "BN": 128, "stages": 4}, {"_on": "wgmma", "BM": 128, "BN": 256, "stages": 3},
  {"_on": "wgmma", "BM": 64, "BN": 128, "stages": 4}, {"_on": "wgmma", "BM": 128, "BN": 128, "stages": 4, "persistent": true},
  {"_on": "wgmma", "BM": 128, "BN": 64, "stages": 4}]' 2>&1 | grep -v -i "warn\|__new__" | tail -8
timeout 150 python3 bench/knob_sweep.py kernelbench/level1/38_conv3d.py --precision torch --out "$OUT/ks38.json" \
  --knobs '[{"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4}, {"mode": "wgmma", "BM": 64, "BN": 256, "stages": 4},
  {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 6, "persistent": true}, {"mode": "wgmma", "BM": 64, "BN": 128, "stages": 4, "im2col": false},
  {"mode": "wgmma", "BM": 128, "BN": 32, "stages": 6, "swap": true}, {"mode": "wgmma", "BM": 128, "BN": 32, "stages": 6, "swap": true, "persistent": true},
  {"mode": "wgmma", "BM": 64, "BN": 32, "stages": 8, "swap": true}]' \
  2>&1 | grep -v -i "warn\|__new__" | tail -8
# ResNet-50's residual 1x1 convs (k7/k10/k13 ~96 us for 115 MB: the staged walk's loads in flight, 4 runs a
# thread by default) with 8 runs a thread in flight
timeout 130 python3 bench/model_knob_sweep.py --model "resnet50 b32" --top 12 --out "$OUT/resnet-swunroll.json" \
  --knobs '[{"swunroll": 8}, {"swunroll": 8, "persistent": true}]' 2>&1 | grep -v -i "warn\|cls.__new__" | tail -16
