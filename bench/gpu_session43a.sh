#!/usr/bin/env bash
# For the forty-third session, one device call per PART:
#   PART=a: the real KernelBench level 3's two TF32 failures (10_ResNet101, 24_EfficientNetB2) under
#           --precision-fallback (-> $OUT/f), then 42_GRUBidirectionalHidden, the one problem of the 20-sample
#           the forty-second did not reach (resumed from its JSON -> $OUT/real)
#   PART=b: 21_EfficientNetMBConv's RS sweep (bench/gpu_session43d.sh -> $OUT/d), then the project suite's
#           levels 2 and 3 with EMBER_WGMMA_N32 on by default (-> $OUT/kb)
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
if [ "${PART:-a}" = b ]; then  # (reprioritised mid-session: 21_EfficientNetMBConv's RS sweep first, then the suite)
  OUT=$base/d bash bench/gpu_session43d.sh
  OUT=$base/kb LEVELS="2 3" BUDGET=140 bash bench/gpu_session37c.sh
fi
if [ "${PART:-a}" = c ]; then
  OUT=$base/kb LEVELS=1 BUDGET=${BUDGET:-400} bash bench/gpu_session37c.sh
fi
