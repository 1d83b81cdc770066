#!/usr/bin/env bash
# Twenty-seventh session, run h (g with a two-slot decode ring in tasks): the megakernel's attention as splits over a workspace (a cluster's
# blocks as tasks combining their partials): the megakernel CUDA tests, then the Llama-1B-shaped step
# (16 layers, context 1024) against the kernels, with a short schedule fuzz and the per-task timeline.
set -u
. bench/gpu_env.sh
export OUT
#timeout 200 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 6 -rf -q 2>&1 | tee "$OUT/cuda_tests_megakernel.log" | tail -3
timeout 420 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 50 \
  --trace-dir "$OUT" 2>&1 | grep -v -i warn | tail -12
