#!/usr/bin/env bash
# Twenty-fourth session, run d: the wgmma convs with a short k loop (a phase-form transposed conv:
# k = 4 taps x 64 channels = 8 slices) spend their time outside the k loop — ncu: 2.7 ms for 69
# GFLOP in KernelBench level-2 91, sm throughput 23%. Persistent tiles (the next tile's loads under
# this one's epilogue), the staged epilogue, two blocks per SM, on 91 and 5 (level 2) and the
# gathered 2-D convs of level 1 (56, 65, 69).
set -u
. bench/gpu_env.sh
K=third_party/KernelBench
timeout 400 python3 bench/knob_sweep.py $K/level2/91_*.py $K/level2/5_*.py $K/level1/56_*.py $K/level1/65_*.py $K/level1/69_*.py \
  --precision torch --out "$OUT/knob-sweep-short-k.json" --knobs '[{"_on":"wgmma","persistent":true},{"_on":"wgmma","sepi":true},
  {"_on":"wgmma","persistent":true,"sepi":true},{"_on":"wgmma","BM":64,"BN":128,"stages":4,"occupancy":2},
  {"_on":"wgmma","BM":128,"BN":128,"stages":4,"persistent":true},{"_on":"wgmma","persistent":true,"stages":2},
  {"_on":"wgmma","BM":128,"BN":128,"stages":4}]' 2>&1 | grep -v -i warn
