#!/usr/bin/env bash
# Thirty-third session, run e: short sums read along a flipped axis (step -1) in the scan layout
# (the real KernelBench's 91_cumsum_reverse block totals); the scan tests and its four cumsum problems.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_scan.py -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head; tail -1 "$OUT/tests.log"
timeout 150 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 3 --ember-precision torch --only cumsum \
    --out "$OUT/kb-real.json" 2>&1 | grep -v -i warn | tail -1
python3 -c "
import json; d = json.load(open('$OUT/kb-real.json'))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('speedup_vs_compile'), r.get('max_abs_err'))"
