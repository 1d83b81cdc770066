#!/usr/bin/env bash
# For the thirty-fourth session (prepared in the thirty-third; not run): the whole CUDA suite on
# the thirty-third session's final build — its suffix scans (cumsum's gradient, kernel/scan.py
# `suffix`) and the CUDA gradient tests in tests/test_scan.py never ran on a GPU; the decode
# default at head dim 64 now interleaves the cluster's tiles (`steal` "static") — then the
# scans' bench with the gradient, and the real KernelBench's masked cumsum (93, not reached) and
# cumprod (90: unsupported until this build, now two scans).
set -u
. bench/gpu_env.sh
export OUT
timeout 300 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
timeout 120 python3 bench/scan.py --cases 0,2,5 --out "$OUT/scan.json" 2>&1 | grep -v -i warn | grep -v loops
for tool in memcheck racecheck; do  # the scan kernels (their shuffles and guarded lanes)
  timeout 150 compute-sanitizer --tool $tool python3 bench/sanitize_scan.py > "$OUT/sanitize-scan-$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|wrong' "$OUT/sanitize-scan-$tool.log" | tr '\n' ' ')"
done
timeout 240 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 3 --ember-precision torch --only masked_cumsum,cumprod \
    --out "$OUT/kb-93.json" 2>&1 | grep -v -i warn | tail -1
python3 -c "
import json; d = json.load(open('$OUT/kb-93.json'))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('speedup_vs_compile'), r.get('max_abs_err'))"
