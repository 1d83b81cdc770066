#!/usr/bin/env bash
# Twenty-sixth session, run a: flash-decoding's key split over P clusters (knob `splits`, the last
# block to arrive combining the partials): its CUDA tests, then the decode knobs swept as 16 layers in
# one graph replay; ResNet-101 / EfficientNet-B2 (level 3) at Ember's float32 precision (3xTF32).
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_attention.py -k "decode" -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests_decode.log" | tail -3
timeout 330 python3 bench/attention.py --decode-layers 16 --variants --out "$OUT/attention-decode-layers-variants.json" 2>&1 | grep -v -i warn | tail -6
timeout 120 python3 bench/kernelbench.py third_party/KernelBench --level 3 --only 10_ResNet101,24_EfficientNetB2 --seeds 2 --trials 20 --warmup 3 \
  --ember-precision float32 --out "$OUT/real-kb-l3-resnet101-effnetb2-float32.json" 2>&1 | grep -v -i warn | grep -v "^  " | tail -7
