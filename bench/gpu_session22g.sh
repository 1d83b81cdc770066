#!/usr/bin/env bash
# Twenty-second session, seventh run: ResNet-50's stem and layer-1 convs (bf16, batch 32) under
# wgmma knob overlays: persistence, fewer stages, two blocks per SM, the staged epilogue, and the
# gather's producers / unroll for the stem.
set -u
. bench/gpu_env.sh
timeout 500 python3 bench/conv_sweep.py --only "l1 1x1,stem,l1 3x3" --knobs '[{"_on": "wgmma", "persistent": true}, {"_on": "wgmma", "stages": 2}, {"_on": "wgmma", "BM": 128, "BN": 128, "stages": 2}, {"_on": "wgmma", "BM": 64, "BN": 128, "stages": 2, "occupancy": 2}, {"_on": "wgmma", "sepi": true}, {"_on": "wgmma", "producers": 2, "gunroll": 2}, {"_on": "wgmma", "BM": 128, "BN": 64, "stages": 4, "producers": 2, "gunroll": 4}]' --out "$OUT/conv-sweep-l1-stem.json" 2>&1 | grep -v -i warn | grep -v "^ *return\|^ *warn"
