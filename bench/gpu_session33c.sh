#!/usr/bin/env bash
# Thirty-third session, run c: the scan form with shifted blocks (the exclusive cumsum, a padded
# flipped axis) and half-precision terms; per-kernel times of the scan and of the block totals
# under several configs (bench/scan.py); the real KernelBench's cumsum problems again.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/test_scan.py "tests/test_cuda.py::test_op_suite_on_cuda" -k "cumsum or scan" \
  -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head; tail -1 "$OUT/tests.log"
timeout 200 python3 bench/scan.py --cases 0,1 --out "$OUT/scan.json" 2>&1 | grep -v -i warn
timeout 150 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 3 --ember-precision torch --only cumsum \
    --out "$OUT/kb-real.json" 2>&1 | grep -v -i warn | tail -1
python3 -c "
import json; d = json.load(open('$OUT/kb-real.json'))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('speedup_vs_compile'), r.get('max_abs_err'))"
