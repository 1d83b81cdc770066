#!/usr/bin/env bash
# Forty-fourth session: real KernelBench 22_EfficientNetB0's launches summed with rewrite 3 off / on (its whole-problem
# timings in 44g moved with eager's, 3.29 -> 4.69 ms between two calls: the sum of launches is the steadier measure).
set -u
. bench/gpu_env.sh
export OUT
for wc in ${WCS:-0 1}; do
  EMBER_WINDOW_CONSTANTS=$wc timeout 80 python3 bench/problem_launches.py third_party/KernelBench/level3/22_EfficientNetB0.py --no-compile \
    --top 6 --out "$OUT/22-wc$wc.json" 2>&1 | grep -v -i warn | grep -v "cls.__new__" | head -8
done
