#!/usr/bin/env bash
# For the forty-seventh session: the depthwise convs' strips with a remainder (EMBER_STRIP_PREFER_DIVISIBLE=0: real
# KernelBench 82 / 84 / 85's rows — 510 / 254 / 250 of them, 4 not dividing — instead of the batch, which shares only
# the weights; the batch strip measured 816 us on 82 where the rows' V = 2 took 1268, gpu-session45 e/), A/B in one
# run. Then the project suite in one build: `LEVELS=1 BUDGET=380 bash bench/gpu_session37c.sh`, `LEVELS="2 3" BUDGET=170 ...`.
set -u
. bench/gpu_env.sh
export OUT
for d in 1 0; do
  EMBER_STRIP_PREFER_DIVISIBLE=$d timeout 200 python3 bench/kernelbench.py third_party/KernelBench --seeds 2 --level 1 \
    --ember-precision torch --no-compile --only 82_conv_depthwise,84_conv_depthwise,85_conv_depthwise \
    --out "$OUT/depthwise-$d.json" 2>&1 | grep -v -i warn | tail -3 | head -1
  python3 -c "
import json
for p in json.load(open('$OUT/depthwise-$d.json'))['problems']: print('$d', p['name'][:30], p.get('correct'), round(p.get('ember_ms') or 0, 3), round(p.get('speedup_vs_eager') or 0, 2))"
done
