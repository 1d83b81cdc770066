#!/usr/bin/env bash
# Twenty-third session, run b: float32 convs channels-last (TF32 / 3xTF32 wgmma over a copied
# input): the touched CUDA tests, the real KernelBench's level-1 convs, f32 ResNet-50.
set -u
. bench/gpu_env.sh
timeout 240 python3 -m pytest -m cuda -p no:warnings -o addopts="" -x tests/test_contraction_layouts.py tests/test_wgmma.py 2>&1 | tail -5
timeout 330 python3 bench/kernelbench.py third_party/KernelBench --level 1 --only conv --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --time-budget 280 --out "$OUT/real-kb-l1-conv.json" 2>&1 | grep -v -i warn | grep -v "^\[" | tail -50
