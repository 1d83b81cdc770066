#!/usr/bin/env bash
# Twenty-seventh session, run k (not run: no device time was left; for the next session): the
# megakernel with its row tasks' fixed-trip reduction loops unrolled (megakernel option / knob
# `unroll`: the GEMV tasks' loads all in flight at once — the warp-mode loop was not unrolled, so a
# lane held ~2 loads in flight) against the default megakernel and the kernels, context 1024.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 6 -rf -q 2>&1 | tail -2
timeout 420 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 20 --unroll \
  2>&1 | grep -v -i warn | tail -4
