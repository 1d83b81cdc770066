#!/usr/bin/env bash
# Twenty-fifth session, run g: the conv CUDA tests after the input-copy change (a graph input copied
# only for a window's own operand), and NetVLAD (level 3, 46 and 47), which lost an identity copy.
set -u
. bench/gpu_env.sh
timeout 80 python3 -m pytest -m cuda tests/test_cuda.py tests/test_contraction_layouts.py -k "conv or copy" -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -2
timeout 90 python3 bench/kernelbench.py third_party/KernelBench --level 3 --only 46_NetVlad,47_NetVlad --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --out "$OUT/real-kb-l3-netvlad.json" 2>&1 | grep -v -i warn | grep -v "^  " | tail -7
