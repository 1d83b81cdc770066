#!/usr/bin/env bash
# Prepared for the next session's first device run (the twenty-third session's device time ran out):
# the changes built after its last run — strided transposed convs with dilation in the phase form
# (KernelBench 77, 79, 81), ViT's Tensor.unfold, VanillaRNN's state attribute — and the rest of the
# level-3 sample, resumed from run e's JSON. Mamba2 (48, 49) needs einops: `pip download einops --no-deps
# -d .whl` first and run with carry [".whl"].
set -u
. bench/gpu_env.sh
timeout 200 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -6
K=third_party/KernelBench
for p in level1/77_ level1/79_ level1/81_ level1/75_ level3/28_ level3/33_; do
  timeout 120 python3 bench/kernelbench.py $K/${p}*.py --seeds 2 --trials 30 --warmup 3 --ember-precision torch \
    --out "$OUT/kb-$(basename $p).json" 2>&1 | grep -v -i warn | tail -3
done
cp bench/results/gpu-session23-2026-11-26/e/real-kb.json "$OUT/real-kb.json"
timeout 300 python3 bench/kernelbench.py $K --sample 20 --sample-seed 0 --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --time-budget 240 --out "$OUT/real-kb.json" --resume 2>&1 | grep -v -i warn | grep -v "^  " | tail -30
