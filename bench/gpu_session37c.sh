#!/usr/bin/env bash
# For the thirty-seventh session: the project's KernelBench suite in two calls (LEVEL=1, then LEVEL=2
# and 3 in one: `LEVELS="2 3" BUDGET=260 bash bench/gpu_session37c.sh`), so all 78 problems are reached
# (one call of 330 s reached level 1's 46).
set -u
. bench/gpu_env.sh
export OUT
for lv in ${LEVELS:-1}; do
  timeout 560 python3 bench/kernelbench.py kernelbench --device cuda --seeds 5 --ember-precision torch --level $lv \
    --time-budget ${BUDGET:-500} --out "$OUT/kb-level$lv.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json; d = json.load(open('$OUT/kb-level$lv.json')); print('partial', d['partial'], len(d['problems']))
for k, v in d['summary'].items(): print(k, {x: round(y, 3) if isinstance(y, float) else y for x, y in v.items()})"
done
