#!/usr/bin/env bash
# Thirty-eighth session: ResNet-50's bottleneck-closing 1x1 convs (BN + residual + ReLU in the epilogue) ran
# at 26-80 TFLOP/s and 650-890 GB/s in 38e (k7/k10/k13 130 us each, k20.. 75, k30.. 43: ~1 ms of 2.39):
# the epilogue's residual loads. Existing knobs over them, torch eager beside.
set -u
. bench/gpu_env.sh
export OUT
timeout 280 python3 bench/conv_sweep.py --only "+res" --out "$OUT/res-sweep.json" --knobs '[{"sepi": true}, {"persistent": true},
 {"BM": 128, "BN": 128, "stages": 4}, {"BM": 128, "BN": 128, "stages": 4, "sepi": true}, {"BM": 64, "BN": 256, "stages": 4},
 {"BM": 64, "BN": 128, "stages": 4, "occupancy": 2}, {"BM": 64, "BN": 64, "stages": 4, "occupancy": 2},
 {"BM": 128, "BN": 64, "stages": 4, "sepi": true}, {"BM": 128, "BN": 128, "stages": 4, "persistent": true}]' 2>&1 | grep -v -i warn
