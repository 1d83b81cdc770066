#!/usr/bin/env bash
# Twenty-third session, run d: LOAD_BATCH 16, flipped constants (transposed convs' weights by TMA):
# the whole CUDA suite, two producer warpgroups on four real convs, ResNet-50 bf16 / f32 against eager
# and torch.compile (two interleaved rounds).
set -u
. bench/gpu_env.sh
timeout 300 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -8
K=third_party/KernelBench/level1
timeout 160 python3 bench/knob_sweep.py $K/65_*.py $K/69_*.py $K/56_*.py $K/63_*.py --precision torch --out "$OUT/knob-sweep-convs.json" \
  --knobs '[{"_on": "wgmma", "BM": 64, "BN": 256, "stages": 4, "producers": 2}, {"_on": "wgmma", "BM": 128, "BN": 128, "stages": 4, "producers": 2}]' 2>&1 | grep -v -i warn | grep " us \|Error" | tail -14
timeout 240 python3 bench/gpu_models.py --only resnet50 --dtypes bf16,f32 --rounds 2 --out "$OUT/resnet.json" 2>&1 | grep -v -i warn | tail -3
