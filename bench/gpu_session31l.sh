#!/usr/bin/env bash
# Thirty-first session, run l: the project's KernelBench suite (kernelbench/, 78 problems) on this
# build at PyTorch's precision, against eager and torch.compile — last measured in the ninth session
# (geomean 1.16x eager). --time-budget leaves a partial JSON when the run is cut short; a second
# call resumes from RESUME (a copy of the first call's JSON) when given.
set -u
. bench/gpu_env.sh
export OUT
[ -n "${RESUME:-}" ] && cp "$RESUME" "$OUT/kb.json"
timeout 570 python3 bench/kernelbench.py kernelbench --device cuda --seeds 5 --ember-precision torch \
  --time-budget ${BUDGET:-470} ${RESUME:+--resume} --out "$OUT/kb.json" 2>&1 | grep -v -i warn | tail -4
python3 -c "
import json; d = json.load(open('$OUT/kb.json')); print('partial', d['partial'], len(d['problems']))
for k, v in d['summary'].items(): print(k, {x: round(y, 3) if isinstance(y, float) else y for x, y in v.items()})"
