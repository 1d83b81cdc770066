#!/usr/bin/env bash
# For the forty-third session, one device call per PART:
#   PART=a: the real KernelBench level 3's two TF32 failures (10_ResNet101, 24_EfficientNetB2) under
#           --precision-fallback (-> $OUT/f), then 42_GRUBidirectionalHidden, the one problem of the 20-sample
#           the forty-second did not reach (resumed from its JSON -> $OUT/real)
#   PART=b: 33_VanillaRNN's tf32x3 tile overlays (knob_sweep fixed since the forty-second), then the project
#           suite's levels 2 and 3 with EMBER_WGMMA_N32 on by default (-> $OUT/kb)
#   PART=c: the project suite's level 1 (-> $OUT/kb)
set -u
. bench/gpu_env.sh
export OUT
base=$OUT
if [ "${PART:-a}" = a ]; then
  OUT=$base/f LEVEL=3 KB_ARGS="--only 10_,24_" KB_S=200 bash bench/gpu_real_kb.sh
  OUT=$base/real LEVEL=3 RESUME=bench/results/gpu-session42-2026-11-28/real/real-kb-l3.json KB_ARGS="--only 42_" KB_S=${KB42_S:-320} \
    bash bench/gpu_real_kb.sh
fi
if [ "${PART:-a}" = b ]; then
  mkdir -p "$base/c"
  timeout 170 python3 bench/knob_sweep.py third_party/KernelBench/level3/33_VanillaRNN.py --precision torch --out "$base/c/ks-rnn.json" \
    --knobs '[{"_on": "wgmma", "BM": 64, "BN": 128, "stages": 4}, {"_on": "wgmma", "BM": 128, "BN": 128, "stages": 3, "persistent": true},
    {"_on": "wgmma", "BM": 128, "BN": 64, "stages": 4}, {"_on": "wgmma", "promote": 8}, {"_on": "wgmma", "promote": 0}]' 2>&1 | grep -v -i "warn\|__new__" | tail -8
  OUT=$base/kb LEVELS="2 3" BUDGET=150 bash bench/gpu_session37c.sh
fi
if [ "${PART:-a}" = c ]; then
  OUT=$base/kb LEVELS=1 BUDGET=${BUDGET:-400} bash bench/gpu_session37c.sh
fi
