#!/usr/bin/env bash
# For the thirty-seventh session, after 37a: the gather knobs on real models and the real KernelBench's
# convs, and the thirty-sixth session's defaults not yet timed together (layout_gemm's MIN_INTENSITY
# on the pointwise convs: project 35 copied, real 87 not).
set -u
. bench/gpu_env.sh
export OUT
for hc in 00 11; do
  EMBER_WGMMA_HOIST=${hc:0:1} EMBER_WGMMA_CPASYNC=${hc:1:1} timeout 150 python3 bench/gpu_models.py --only resnet50 --dtypes bf16 \
    --rounds 2 --out "$OUT/resnet-$hc.json" 2>&1 | grep -v -i warn | tail -3
done
show() { python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('speedup_vs_eager'))" "$1"; }
for hc in 00 11; do
  EMBER_WGMMA_HOIST=${hc:0:1} EMBER_WGMMA_CPASYNC=${hc:1:1} timeout 150 python3 bench/kernelbench.py third_party/KernelBench --device cuda \
    --seeds 1 --ember-precision torch --no-compile --only 54_conv_standard_3D__square,55_conv_standard_2D__asymmetric,63_conv_standard_2D__square,87_conv_pointwise \
    --out "$OUT/real-convs-$hc.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/real-convs-$hc.json"
done
timeout 60 python3 bench/kernelbench.py kernelbench --device cuda --seeds 3 --ember-precision torch --only 35_conv2d_pointwise,38_conv3d \
  --out "$OUT/kb-35-38.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-35-38.json"
# the mma mode's vector loads over ragged rows (knob `rvec`, EMBER_MMA_RAGGED_VECTOR=1): the real
# KernelBench's 71 (514 x 1026 outputs: scalar loads, 7.29 ms) beside 78 (512 x 1024: vectors, 4.24)
for rv in 0 1; do
  EMBER_MMA_RAGGED_VECTOR=$rv timeout 120 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 1 --ember-precision torch \
    --no-compile --only 71_conv_transposed_2D__asym,78_conv_transposed_2D_asym --out "$OUT/real-rvec-$rv.json" 2>&1 | grep -v -i warn | tail -1
  show "$OUT/real-rvec-$rv.json"
done
timeout 120 python3 -m pytest -m cuda tests/test_cuda.py -k "rvec or ragged" -p no:cacheprovider -p no:warnings -n 8 -q 2>&1 | tail -2
