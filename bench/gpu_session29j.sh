#!/usr/bin/env bash
# Twenty-ninth session, run j: the RMSNorms folded into the GEMVs they feed (Target.fold_norms,
# kernel/recompute.py: the statistic recomputed per row, its 1 / rms taken out of the product so
# both run as one loop; a 16-layer step 150 -> 118 launches) — its CUDA tests, then the kernels and
# the megakernel with and without it in one run.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_fold_norms.py tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tail -3
timeout 300 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 10 --fold \
  2>&1 | grep -v -i warn | tail -2
