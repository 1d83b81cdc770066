#!/usr/bin/env bash
# For the thirty-eighth session, after 38a (im2col's convs correct): the project's convs, ResNet-50 bf16
# and two real KernelBench convs with the knob off / on, then (if it wins: make EMBER_WGMMA_IM2COL default "1")
# the project suite in two calls with bench/gpu_session37c.sh.
set -u
. bench/gpu_env.sh
export OUT
show() { python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('speedup_vs_eager'))" "$1"; }
for ic in 0 1; do
  EMBER_WGMMA_IM2COL=$ic timeout 110 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 32_conv2d_3x3,14_conv2d_mish_mish,36_conv2d_dilated,37_conv1d,10_conv2d_relu,11_conv2d_batchnorm,13_conv2d_hardswish,15_conv2d_min,03_resnet_basic \
    --no-compile --out "$OUT/kb-convs-$ic.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-convs-$ic.json"
done
for ic in 0 1; do
  EMBER_WGMMA_IM2COL=$ic timeout 95 python3 bench/gpu_models.py --only resnet50 --dtypes bf16 --rounds 3 --out "$OUT/resnet-$ic.json" 2>&1 \
    | grep -v -i warn | tail -1 | cut -c1-700
done
for ic in 0 1; do
  EMBER_WGMMA_IM2COL=$ic timeout 60 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 1 --ember-precision torch \
    --no-compile --only 55_conv_standard_2D__asymmetric,63_conv_standard_2D__square \
    --out "$OUT/real-convs-$ic.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/real-convs-$ic.json"
done
