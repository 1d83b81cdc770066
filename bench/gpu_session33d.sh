#!/usr/bin/env bash
# Thirty-third session, run d: cumsum's block totals (short contiguous row sums) in the scan
# layout too; the CUDA tests, bench/scan.py, the real KernelBench's cumsum problems and the
# project's KernelBench reductions (short sums changed mode: a regression check).
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/test_scan.py "tests/test_cuda.py::test_op_suite_on_cuda" -k "cumsum or scan or sum" \
  -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head; tail -1 "$OUT/tests.log"
timeout 200 python3 bench/scan.py --cases 0,1 --out "$OUT/scan.json" 2>&1 | grep -v -i warn
for p in third_party/KernelBench kernelbench; do
  only=$([ $p = kernelbench ] && echo "cumsum,sum,mean,norm,pool,softmax,loss,argmax,max" || echo cumsum)
  timeout 170 python3 bench/kernelbench.py $p --device cuda --seeds 3 --ember-precision torch --only $only \
    --out "$OUT/kb-$(basename $p).json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json; d = json.load(open('$OUT/kb-$(basename $p).json'))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('speedup_vs_compile'), r.get('max_abs_err'))"
done
