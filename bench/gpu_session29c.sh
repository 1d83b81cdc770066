#!/usr/bin/env bash
# Twenty-ninth session, run c: flash-decoding's keys over more megakernel tasks (option
# decode_splits 16 / 32 / 64; default: the kernels' cluster of 8), and with a 32 KB weight stream.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q 2>&1 | tail -3
timeout 300 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 10 \
  --options '{"ds16": {"decode_splits": 16}, "ds32": {"decode_splits": 32}, "ds64": {"decode_splits": 64}, "ds32_s32k": {"decode_splits": 32, "stream": 32768}}' \
  2>&1 | grep -v -i warn | tail -1
