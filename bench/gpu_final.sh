#!/usr/bin/env bash
# One short GPU session after a refactor (the device budget allowed one call): the CUDA tests, the
# GPU suite (default lowering, no torch.compile baseline), the graph fuzzer, the item-9 chain.
# Usage on the device machine: bash bench/gpu_final.sh   (logs and JSON under $OUT)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 EMBER_CACHE_DIR=/tmp/ember_cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import cuda.core, torch, numpy; print('cuda.core', cuda.core.__version__, 'torch', torch.__version__, 'numpy', numpy.__version__)"; date -u; } 2>&1 | tee "$OUT/env.txt"
timeout ${TEST_TIMEOUT:-130} python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 2>&1 | tee "$OUT/cuda_tests.log" | tail -4
timeout ${BENCH_TIMEOUT:-80} python3 bench/run.py gpu --no-compile --out "$OUT/suite.json" > "$OUT/suite.log" 2>&1; tail -16 "$OUT/suite.log"
timeout ${FUZZ_TIMEOUT:-200} python3 bench/fuzz_gpu.py --count 20000 --time-budget ${FUZZ_BUDGET:-150} --workers 15 --out "$OUT/fuzz.json" > "$OUT/fuzz.log" 2>&1; tail -25 "$OUT/fuzz.log"
timeout 40 python3 bench/debug_keepdim_sums.py 2>&1 | tail -1 | tee "$OUT/keepdim_sums.txt"
