#!/usr/bin/env bash
# Twenty-eighth session, run n (the final build): commutative operands in one name-free order
# (graph.Node.skey: a 16-layer decode step 56 -> 18 distinct kernels, the megakernel 57 -> 19 task
# functions) — the whole CUDA suite, then the megakernel bench (its compile time, device spans).
set -u
. bench/gpu_env.sh
export OUT
timeout 250 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -3
timeout 200 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 20 \
  2>&1 | grep -v -i warn | tail -7
