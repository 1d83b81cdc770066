#!/usr/bin/env bash
# Twenty-second session, eighth run: the sweeps again after the render memo fix (overlays were served
# the default's cached source): ResNet-50's stem and layer-1 convs, and the models' linear layers.
set -u
. bench/gpu_env.sh
timeout 280 python3 bench/conv_sweep.py --only "l1 1x1,stem,l1 3x3" --knobs '[{"_on": "wgmma", "persistent": true}, {"_on": "wgmma", "stages": 2}, {"_on": "wgmma", "BM": 128, "BN": 128, "stages": 2}, {"_on": "wgmma", "BM": 64, "BN": 128, "stages": 2, "occupancy": 2}, {"_on": "wgmma", "sepi": true}, {"_on": "wgmma", "producers": 2, "gunroll": 2}, {"_on": "wgmma", "BM": 128, "BN": 64, "stages": 4, "producers": 2, "gunroll": 4}]' --out "$OUT/conv-sweep-l1-stem.json" 2>&1 | grep -v -i warn | grep -v "^ *return\|^ *warn"
timeout 280 python3 bench/gemm_tiles.py --knobs '[{"BM": 128, "BN": 192, "stages": 4}, {"BM": 128, "BN": 128, "stages": 4}, {"persistent": true}, {"sepi": true}, {"BM": 64, "BN": 128, "stages": 4, "occupancy": 2}]' --out "$OUT/gemm-tiles.json" 2>&1 | grep -v -i warn | grep -v "^ *return\|^ *warn"
