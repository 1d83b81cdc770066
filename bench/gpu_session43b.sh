#!/usr/bin/env bash
# For the forty-third session: wgmma's RS form (codegen/cuda_wgmma_rs.py; EMBER_WGMMA_RS=1 leaves a TF32
# GEMM's one MN-major operand uncopied and loads its fragments into registers): its CUDA tests, then the A/B
# on the problems the CPU survey lists (`python bench/flag_survey.py EMBER_WGMMA_RS=1`, and with
# `--problems third_party/KernelBench`): project 35_conv2d_pointwise (0.34x eager: a K-major copy of its
# NCHW input, then the GEMM reading that twice), real KB 87_conv_pointwise_2D (REAL_ONLY adds more), then
# 35's tiles under the flag.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_wgmma_rs.py -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
echo "cuda tests rc=$? $(grep -a -c '^FAILED' "$OUT/tests.log") FAILED"; grep -a '^FAILED\|Error' "$OUT/tests.log" | head -8; tail -1 "$OUT/tests.log"
for v in base EMBER_WGMMA_RS=1; do
  env $([ $v = base ] || echo $v) timeout 100 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 35_conv2d_pointwise --out "$OUT/ab-proj-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  env $([ $v = base ] || echo $v) timeout ${REAL_S:-150} python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 2 --ember-precision torch \
    --only ${REAL_ONLY:-87_conv_pointwise} --out "$OUT/ab-real-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json
d = json.load(open('$OUT/ab-proj-${v%%=*}.json'))
try: d['problems'] += json.load(open('$OUT/ab-real-${v%%=*}.json'))['problems']
except Exception as e: print('real:', e)
for p in d['problems']: print('$v', p['name'], p.get('status'), p.get('ember_ms'), 'eager', p.get('eager_ms'), 'compile', p.get('compile_ms'))"
done
EMBER_WGMMA_RS=1 timeout 120 python3 bench/knob_sweep.py kernelbench/level1/35_conv2d_pointwise.py --precision torch --out "$OUT/ks35.json" \
  --knobs '[{"_on": "wgmma", "stages": 4}, {"_on": "wgmma", "stages": 4, "persistent": true}, {"_on": "wgmma", "BN": 128, "stages": 4},
  {"_on": "wgmma", "BM": 64, "BN": 256, "stages": 4}, {"_on": "wgmma", "overlap": false}]' 2>&1 | grep -v -i "warn\|__new__" | tail -8
