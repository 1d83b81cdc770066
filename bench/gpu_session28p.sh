#!/usr/bin/env bash
# Twenty-eighth session, run p (NOT RUN: no device time was left; for the next session): the megakernel leaving 96 KB of each SM to L1 by
# default (tasks capped at the worker count they allow: flash-decoding in 16-key tiles) against
# l1_reserve=0; the megakernel CUDA tests first.
set -u
. bench/gpu_env.sh
export OUT
timeout 80 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 6 -rf -q 2>&1 | tail -2
timeout 150 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 20 \
  --options '{"no_l1_reserve": {"l1_reserve": 0}}' 2>&1 | grep -v -i warn | tail -2
