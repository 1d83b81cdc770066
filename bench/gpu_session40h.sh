#!/usr/bin/env bash
# Fortieth session: graph-input weights copied channels-last by default now (40g measured bf16 and TF32);
# float32 accuracy (3xTF32: mma over NCHW against wgmma tf32x3 over the copies) A/B, and the CUDA tests
# of the conv layouts and training.
set -u
. bench/gpu_env.sh
export OUT
for v in EMBER_COPY_INPUT_WEIGHTS=0 EMBER_COPY_INPUT_WEIGHTS=1; do
  env $v timeout 50 python3 bench/f32_conv.py --cases 1,2 --configs 1 --out "$OUT/f32acc-${v#*=}.json" 2>&1 \
    | grep -v -i warn | tail -6 | sed "s/^/$v /"
done
timeout 120 python3 -m pytest -m cuda tests/test_contraction_layouts.py tests/test_train.py \
  -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
echo "cuda tests rc=$? $(grep -a -c '^FAILED' "$OUT/tests.log") FAILED"; grep -a '^FAILED' "$OUT/tests.log" | head -5; tail -1 "$OUT/tests.log"
