#!/usr/bin/env bash
# One GPU session: environment facts, the CUDA test suite, then the GPU benchmark.
# Usage (on the device machine, from the repo root): bash bench/gpu_session.sh [bench args...]
set -u
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 EMBER_CACHE_DIR=/tmp/ember_cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import cuda.core, torch, numpy; print('cuda.core', cuda.core.__version__, 'torch', torch.__version__, 'numpy', numpy.__version__)"; } 2>&1 | tee "$OUT/env.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -m cuda tests/test_cuda.py -q -x -p no:cacheprovider ${TEST_ARGS:-} 2>&1 | tee "$OUT/cuda_tests.log" | tail -25
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  python3 bench/run.py gpu --out "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.log" | tail -40
fi
