#!/usr/bin/env bash
# Twenty-ninth session, run f: the down projection's K = 8192 loop unrolled by 8 (the default now;
# option unroll=4 is about nvcc's own choice), and cyclic dealing (workers sweep a matrix together);
# the default traced.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q 2>&1 | tail -3
timeout 330 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 20 \
  --fuzz-options '{"cyclic": true}' --trace-dir "$OUT" \
  --options '{"unroll4": {"unroll": 4}, "cyclic": {"cyclic": true}, "cyclic_u16": {"cyclic": true, "unroll": 16}}' \
  2>&1 | grep -v -i warn | tail -1
