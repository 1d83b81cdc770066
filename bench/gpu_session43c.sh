#!/usr/bin/env bash
# For the forty-third session, after 43b (RS form correct; 35 0.266 -> 0.120 ms, real 87 8.98 -> 4.54): the RS
# default now persistent with 4 stages; its CUDA tests again, then the A/B on everything the CPU survey lists
# (project 35; real KB 87 and level 3's 21_EfficientNetMBConv, 25_ShuffleNetUnit, 6_GoogleNetInceptionModule)
# and on TF32 GEMMs at 4096^3 (`x @ W`, W [K, N]: the RS form instead of a K-major copy; `x @ W.T` unchanged).
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_wgmma_rs.py -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
echo "cuda tests rc=$? $(grep -a -c '^FAILED' "$OUT/tests.log") FAILED"; grep -a '^FAILED\|Error' "$OUT/tests.log" | head -8; tail -1 "$OUT/tests.log"
for v in base EMBER_WGMMA_RS=1; do
  env $([ $v = base ] || echo $v) timeout 60 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 35_conv2d_pointwise --out "$OUT/ab-proj-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  env $([ $v = base ] || echo $v) timeout ${REAL_S:-160} python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 2 --ember-precision torch \
    --only ${REAL_ONLY:-87_conv_pointwise,21_EfficientNetMBConv,25_ShuffleNetUnit,6_GoogleNetInceptionModule} --out "$OUT/ab-real-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json
d = json.load(open('$OUT/ab-proj-${v%%=*}.json'))
try: d['problems'] += json.load(open('$OUT/ab-real-${v%%=*}.json'))['problems']
except Exception as e: print('real:', e)
for p in d['problems']: print('$v', p['name'], p.get('status'), p.get('ember_ms'), 'eager', p.get('eager_ms'), 'compile', p.get('compile_ms'))"
  env $([ $v = base ] || echo $v) timeout 70 python3 bench/contractions.py --device-time --only "tf32 nn,tf32 nt" \
    --out "$OUT/tf32-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -3 | sed "s/^/$v /"
done
