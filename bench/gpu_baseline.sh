#!/usr/bin/env bash
# Baseline GPU session: environment, the item-9 repro at full size, all CUDA tests, the GPU suite.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 EMBER_CACHE_DIR=/tmp/ember_cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import cuda.core, torch, numpy; print('cuda.core', cuda.core.__version__, 'torch', torch.__version__, 'numpy', numpy.__version__)"; date -u; } 2>&1 | tee "$OUT/env.txt"
python3 bench/debug_keepdim_sums.py 2>&1 | tail -3 | tee "$OUT/keepdim_sums.txt"
timeout ${TEST_TIMEOUT:-240} python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -n 14 ${TEST_ARGS:-} 2>&1 | tee "$OUT/cuda_tests.log" | tail -15
timeout ${BENCH_TIMEOUT:-240} python3 bench/run.py gpu --out "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.log" | tail -25
