#!/usr/bin/env bash
# Twenty-eighth session, run d: the residual stream materialised at a decode row's size (rule 7b's
# floor 2^18 -> 256) against inlined, kernels and megakernel, and the megakernel's sync-free
# tasks (free_running) against a barrier between every block; the megakernel CUDA tests first.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 6 -rf -q 2>&1 | tail -2
timeout 470 python3 bench/residual_ab.py --out "$OUT" --trace 2>&1 | grep -v -i warn | tail -6
