#!/usr/bin/env bash
# For the forty-third session: real KB 21_EfficientNetMBConv lost under EMBER_WGMMA_RS=1 (5.72 -> 7.27 ms; its
# expand conv 112 -> 672 channels over 10 x 224 x 224 NCHW, the RS kernel unswapped with the pixels on A,
# 3 column tiles of 256) where 35, 87 and GoogleNet's inception won: the RS kernel's tiles and knobs, and the
# default without the flag (the K-major copy, then the shared-memory form) in the same process.
set -u
. bench/gpu_env.sh
export OUT
EMBER_WGMMA_RS=1 timeout 240 python3 bench/knob_sweep.py third_party/KernelBench/level3/21_EfficientNetMBConv.py --precision torch --out "$OUT/ks21.json" \
  --knobs '[{"_on": "wgmma", "persistent": false, "stages": 3}, {"_on": "wgmma", "BN": 128}, {"_on": "wgmma", "BN": 128, "persistent": false},
  {"_on": "wgmma", "BM": 64, "BN": 256}, {"_on": "wgmma", "overlap": false}, {"_on": "wgmma", "group": 0}, {"_on": "wgmma", "sepi": true}]' 2>&1 | grep -v -i "warn\|__new__" | tail -10
