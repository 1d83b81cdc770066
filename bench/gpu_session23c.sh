#!/usr/bin/env bash
# Twenty-third session, run c: the chunked gather with a batch of loads in flight per thread
# (LOAD_BATCH, knob gunroll): CUDA tests of the gathers, a gunroll / tile sweep on four real
# KernelBench convs, the level-1 convs again, bf16 ResNet-50.
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest -m cuda -p no:warnings -o addopts="" -x tests/test_contraction_layouts.py tests/test_wgmma.py -k "conv or gather" 2>&1 | tail -3
K=third_party/KernelBench/level1
timeout 200 python3 bench/knob_sweep.py $K/65_*.py $K/56_*.py $K/69_*.py $K/63_*.py --precision torch --out "$OUT/knob-sweep-convs.json" \
  --knobs '[{"_on": "wgmma", "gunroll": 2}, {"_on": "wgmma", "gunroll": 8}, {"_on": "wgmma", "gunroll": 16}, {"_on": "wgmma", "producers": 2, "gunroll": 8}, {"_on": "wgmma", "BM": 128, "BN": 128, "stages": 4, "gunroll": 8}]' 2>&1 | grep -v -i warn | tail -14
timeout 90 python3 bench/gpu_models.py --only resnet50 --dtypes bf16 --rounds 1 --no-torch-compile --out "$OUT/resnet-bf16.json" 2>&1 | grep -v -i warn | tail -3
timeout 300 python3 bench/kernelbench.py third_party/KernelBench --level 1 --only conv --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --time-budget 240 --no-compile --out "$OUT/real-kb-l1-conv.json" 2>&1 | grep -v -i warn | grep -v "^\[" | tail -42
