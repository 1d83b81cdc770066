#!/usr/bin/env bash
# Twenty-second session, eleventh run: whole ResNet-50 bf16 under wgmma overlays (two blocks per SM
# with 64 x 128 tiles — the epilogue-bound 1x1 convs over 64-256 channels — and persistence).
set -u
. bench/gpu_env.sh
timeout 400 python3 bench/conv_sweep.py --model-only --knobs '[{"_on": "wgmma", "BM": 64, "BN": 128, "stages": 4, "occupancy": 2}, {"_on": "wgmma", "persistent": true}, {"_on": "wgmma", "BM": 64, "BN": 64, "stages": 4, "occupancy": 2}]' --out "$OUT/resnet-overlays.json" 2>&1 | grep -v -i warn | grep -v "^ *return\|^ *warn"
