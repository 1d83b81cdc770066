#!/usr/bin/env bash
# Twenty-fourth session, run a: the CUDA suite and the changes the twenty-third built after its last
# device run — strided transposed convs with dilation in the phase form (KernelBench 77, 79, 81, 75),
# ViT's Tensor.unfold (level 3, 28), VanillaRNN's state buffer (level 3, 33) — each problem alone.
set -u
. bench/gpu_env.sh
timeout 170 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -6
K=third_party/KernelBench
for p in ${PROBLEMS:-level1/77_ level1/79_ level1/81_ level1/75_ level3/28_ level3/33_}; do
  timeout ${EACH:-70} python3 bench/kernelbench.py $K/${p}*.py --seeds 2 --trials 30 --warmup 3 --ember-precision torch \
    --out "$OUT/kb-$(basename $p).json" 2>&1 | grep -v -i warn | tail -3
done
