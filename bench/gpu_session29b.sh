#!/usr/bin/env bash
# Twenty-ninth session, run b: the weight stream (megakernel option `stream`: each worker keeps its
# next N bytes of weights asked of L2 ahead of it, runtime/megakernel.py stream_window) at four
# window sizes against the default; the megakernel CUDA tests first (one with the stream).
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q 2>&1 | tail -3
timeout 300 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 1 --fuzz-runs 10 \
  --options '{"s32k": {"stream": 32768}, "s64k": {"stream": 65536}, "s128k": {"stream": 131072}, "s256k": {"stream": 262144}}' \
  2>&1 | grep -v -i warn | tail -3
