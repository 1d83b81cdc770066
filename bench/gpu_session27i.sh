#!/usr/bin/env bash
# Twenty-seventh session, run i: warp-mode kernels run independent reductions over one range as one
# loop (SwiGLU's gate and up rows in the megakernel's GEMV task): the megakernel CUDA tests, the
# Llama-1B-shaped step as a megakernel against the kernels (context 1024).
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_megakernel_cuda.py tests/test_cuda.py -p no:cacheprovider -p no:warnings -n 12 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -3
timeout 260 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 20 2>&1 | grep -v -i warn | tail -4
