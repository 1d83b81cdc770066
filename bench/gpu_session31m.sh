#!/usr/bin/env bash
# Thirty-first session, run m: cumsum's block totals as sums of their own blocks (the in-block scan
# computed where it is added, not stored and read twice) — measured 20x slower and reverted (ember/ops/reduce.py at 9135127).
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 bench/kernelbench.py kernelbench --device cuda --seeds 5 --ember-precision torch --only cumsum \
  --out "$OUT/kb-cumsum.json" 2>&1 | grep -v -i warn | tail -4
python3 -c "
import json; d = json.load(open('$OUT/kb-cumsum.json'))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('max_abs_err'))"
