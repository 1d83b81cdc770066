#!/usr/bin/env bash
# Forty-sixth session, last: the scan renderer's store sees the position as n * block + lane (its block-level terms,
# cumsum's other levels, simplify to the block: no per-lane division chains). The scan CUDA tests, then the real
# KernelBench's cumsum / cumprod / masked cumsum (the kernels before: 5.09 / 11.78 / 6.13 ms, d/).
set -u
. bench/gpu_env.sh
export OUT
python3 -m pytest -q -p no:warnings -o addopts="" tests/test_scan.py tests/test_thread_window.py 2>&1 | tail -2
timeout 150 python3 bench/kernelbench.py third_party/KernelBench --seeds 1 --level 1 --ember-precision torch --no-compile \
  --only 89_cumsum,90_cumprod,93_masked --out "$OUT/real-scans.json" 2>&1 | grep -v -i warn | tail -3 | head -1
python3 -c "
import json
for p in json.load(open('$OUT/real-scans.json'))['problems']: print(p['name'][:30], p.get('correct'), round(p.get('ember_ms') or 0, 3), round(p.get('eager_ms') or 0, 3), round(p.get('speedup_vs_eager') or 0, 2))"
