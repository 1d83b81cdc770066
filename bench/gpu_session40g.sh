#!/usr/bin/env bash
# Fortieth session: a conv whose weights are a graph input (a training step's, the contraction suite's) still
# runs in `mma` over the caller's NCHW tensor (bench/contractions.py conv3x3 64->64 at 64 TFLOP/s; the same
# layer inside ResNet-50, weights constant, channels-last wgmma + im2col: ~32 us). EMBER_COPY_INPUT_WEIGHTS=1
# copies both operands channels-last; it lost in the thirty-fifth session (f32, before im2col). A/B now.
set -u
. bench/gpu_env.sh
export OUT
for v in base EMBER_COPY_INPUT_WEIGHTS=1; do
  env $([ $v = base ] || echo $v) timeout 110 python3 bench/contractions.py --device-time --only "conv3x3,stem" \
    --out "$OUT/conv-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -8 | sed "s/^/$v /"
  env $([ $v = base ] || echo $v) timeout 50 python3 bench/f32_conv.py --cases 1,2 --configs 1 --tf32 \
    --out "$OUT/f32-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -6 | sed "s/^/$v /"
done
