#!/usr/bin/env bash
# Thirty-third session, run b: cumsum as warp shuffle scans (kernel/scan.py, codegen/cuda_scan.py;
# the block totals summed from the input so the last level's scan and its add are one kernel).
# Its CUDA tests, bench/scan.py (scan configs against torch eager / compile), the project's
# KernelBench cumsum problem and the real KernelBench's four cumsum problems (89, 91, 92, 93).
set -u
. bench/gpu_env.sh
export OUT
timeout 240 python3 -m pytest -m cuda tests/test_scan.py "tests/test_cuda.py::test_op_suite_on_cuda" -k "cumsum or scan" \
  -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head; tail -1 "$OUT/tests.log"
timeout 200 python3 bench/scan.py --out "$OUT/scan.json" 2>&1 | grep -v -i warn
for p in kernelbench third_party/KernelBench; do
  timeout 200 python3 bench/kernelbench.py $p --device cuda --seeds 3 --ember-precision torch --only cumsum \
    --out "$OUT/kb-$(basename $p).json" 2>&1 | grep -v -i warn | tail -2
  python3 -c "
import json; d = json.load(open('$OUT/kb-$(basename $p).json'))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('speedup_vs_compile'), r.get('max_abs_err'))"
done
