#!/usr/bin/env bash
# For the forty-first session (built in the fortieth, untimed): TF32 over an MN-major copy through the
# staging ring (EMBER_WGMMA_TF32_STAGE=1: the producer rounds and transposes what TMA copied raw; a 1x1
# conv's NCHW rows as two tensor-map runs). Its CUDA tests, then A/B where it applies: the project's
# 35_conv2d_pointwise (0.26 ms against eager's 0.11: a K-major copy of its input first), a TF32 x @ W
# with W [K, N], and the real KernelBench problems the CPU survey lists (bench/flag_survey.py).
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_wgmma_tf32_staged.py -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
echo "cuda tests rc=$? $(grep -a -c '^FAILED' "$OUT/tests.log") FAILED"; grep -a '^FAILED' "$OUT/tests.log" | head -5; tail -1 "$OUT/tests.log"
for v in base EMBER_WGMMA_TF32_STAGE=1; do
  env $([ $v = base ] || echo $v) timeout 90 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 35_conv2d_pointwise --out "$OUT/kb35-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json; d = json.load(open('$OUT/kb35-${v%%=*}.json'))
for p in d['problems']: print('$v', p['name'], p.get('status'), p.get('ember_ms'), 'eager', p.get('eager_ms'), 'compile', p.get('compile_ms'))"
  env $([ $v = base ] || echo $v) timeout 120 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 2 --ember-precision torch \
    --only 87_conv_pointwise --out "$OUT/kb87-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  env $([ $v = base ] || echo $v) timeout 80 python3 bench/contractions.py --device-time --only "tf32 nn,tf32 nt" \
    --out "$OUT/tf32-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -3 | sed "s/^/$v /"
done
# 35 under tile overlays with the flag on (the default's 128 x 256 has 2 stages and a 2-deep staging ring)
EMBER_WGMMA_TF32_STAGE=1 timeout 150 python3 bench/knob_sweep.py kernelbench/level1/35_conv2d_pointwise.py --precision torch \
  --knobs '[{"_on": "wgmma", "BM": 128, "BN": 128, "stages": 4}, {"_on": "wgmma", "BM": 128, "BN": 128, "stages": 3, "sdepth": 3}, {"_on": "wgmma", "BM": 64, "BN": 256, "stages": 3},
  {"_on": "wgmma", "BM": 128, "BN": 256, "stages": 2, "overlap": true}, {"_on": "wgmma", "BM": 128, "BN": 128, "stages": 4, "persistent": true}]' 2>&1 | grep -v -i "warn\|__new__" | tail -8
