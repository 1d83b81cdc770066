#!/usr/bin/env bash
# Same machine, same call: the GPU suite and KernelBench for a baseline build (a tree unpacked in
# .baseline/, carried) and for this checkout, interleaved, plus the CUDA tests of this checkout.
# Usage: bash bench/gpu_compare.sh   (on the device machine; logs and JSON under $OUT)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>/dev/null && SITE=/tmp/site
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import cuda.core, torch, numpy; print('cuda.core', cuda.core.__version__, 'torch', torch.__version__, 'numpy', numpy.__version__)"; date -u; } 2>&1 | tee "$OUT/env.txt"
run_in() {  # run_in DIR CACHE CMD...: a build's tree on PYTHONPATH, its own kernel cache
  local dir=$1 cache=$2; shift 2
  (cd "$dir" && PYTHONPATH=$PWD${SITE:+:$SITE} EMBER_CACHE_DIR=$cache "$@")
}
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  run_in . /tmp/cache_new timeout 300 python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -n 14 2>&1 | tee "$OUT/cuda_tests.log" | tail -3
fi
KB="bench/kernelbench.py kernelbench --device cuda --seeds 2 --trials 50 --no-compile --ember-precision torch"
for round in 1; do
  run_in .baseline /tmp/cache_old timeout 200 python3 bench/run.py gpu --no-compile --out "$OUT/suite_old.json" > "$OUT/suite_old.log" 2>&1
  run_in . /tmp/cache_new timeout 200 python3 bench/run.py gpu --no-compile --out "$OUT/suite_new.json" > "$OUT/suite_new.log" 2>&1
  if [ "${SKIP_KB:-0}" != 1 ]; then
    run_in .baseline /tmp/cache_old timeout 400 python3 $KB --out "$OUT/kb_old.json" > "$OUT/kb_old.log" 2>&1
    run_in . /tmp/cache_new timeout 400 python3 $KB --out "$OUT/kb_new.json" > "$OUT/kb_new.log" 2>&1
  fi
done
tail -4 "$OUT"/suite_*.log; tail -3 "$OUT"/kb_*.log 2>/dev/null
