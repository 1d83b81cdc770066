#!/usr/bin/env bash
# For the forty-third session, the RS form on by default (EMBER_WGMMA_RS=1; persistent only where swapped, after
# 43d's sweep on 21_EfficientNetMBConv): its CUDA tests and the layout tests, the two level-3 problems the default's
# rule changes (21, 25: A/B in this call), then the project suite's level 1 (35_conv2d_pointwise is there).
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_wgmma_rs.py tests/test_layout_gemm.py -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
echo "cuda tests rc=$? $(grep -a -c '^FAILED' "$OUT/tests.log") FAILED"; grep -a '^FAILED\|Error' "$OUT/tests.log" | head -8; tail -1 "$OUT/tests.log"
for v in EMBER_WGMMA_RS=0 EMBER_WGMMA_RS=1; do
  env $v timeout 130 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 2 --ember-precision torch \
    --only 21_EfficientNetMBConv,25_ShuffleNetUnit --out "$OUT/ab-real-${v#*=}.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json
for p in json.load(open('$OUT/ab-real-${v#*=}.json'))['problems']: print('$v', p['name'], p.get('status'), p.get('ember_ms'), 'eager', p.get('eager_ms'), 'compile', p.get('compile_ms'))"
done
OUT=$OUT/kb LEVELS=1 BUDGET=${BUDGET:-280} bash bench/gpu_session37c.sh
