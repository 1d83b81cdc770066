#!/usr/bin/env bash
# Twenty-fourth session, run e: the staged epilogue by default where the output's columns do not pair
# (one column per lane across the row): the wgmma CUDA tests; KernelBench level-2 91 and 5 against
# the register epilogue (sepi false) and the column-pair walk's earlier numbers (run d).
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest -m cuda tests/test_wgmma.py -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests_wgmma.log" | tail -2
K=third_party/KernelBench
timeout 200 python3 bench/knob_sweep.py $K/level2/91_*.py $K/level2/5_*.py --precision torch --out "$OUT/knob-sweep-sepi.json" \
  --knobs '[{"_on":"wgmma","sepi":false}]' 2>&1 | grep -v -i warn
