#!/usr/bin/env bash
# For the forty-second session (built in the forty-first, untimed): the 32-wide wgmma tile unswapped
# (EMBER_WGMMA_N32=1) where a contraction has exactly 32 columns and many rows — a channels-last conv with
# 32 output channels, DenseNet's growth rate (the real KernelBench's 14_DenseNet121DenseBlock ran 0.66x
# eager in the forty-first, its five inner convs in `mma` 128 x 64, half the tile empty). Its CUDA tests,
# then A/B on the problems the CPU survey lists (project: 04_mobilenetv2_blocks; real level 3: DenseNet 14, 15, 16, MobileNetV2 20; re-run `python bench/flag_survey.py EMBER_WGMMA_N32=1` and
# `... --problems third_party/KernelBench --levels 3 --only DenseNet` first and pass them as ONLY / REAL_ONLY),
# then 33_VanillaRNN's tf32x3 GEMMs under tile overlays (9.0 ms against eager's 7.0: ~38 TFLOP/s where
# tf32x3 reached 79-88 at 4096^3).
set -u
# PART=ab (default): the tests and the N32 A/B; PART=rest: the RNN overlays and 35 in `mma` (one device call each)
. bench/gpu_env.sh
export OUT
if [ "${PART:-ab}" = ab ]; then
timeout 150 python3 -m pytest -m cuda tests/test_wgmma_swap.py -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
echo "cuda tests rc=$? $(grep -a -c '^FAILED' "$OUT/tests.log") FAILED"; grep -a '^FAILED' "$OUT/tests.log" | head -5; tail -1 "$OUT/tests.log"
for v in base EMBER_WGMMA_N32=1; do
  env $([ $v = base ] || echo $v) timeout 200 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 2 --ember-precision torch \
    --only ${REAL_ONLY:-14_DenseNet121DenseBlock,15_DenseNet121,20_MobileNetV2} --out "$OUT/ab-real-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  env $([ $v = base ] || echo $v) timeout 100 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only ${ONLY:-04_mobilenetv2_blocks} --out "$OUT/ab-proj-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json
d = json.load(open('$OUT/ab-real-${v%%=*}.json'))
d['problems'] += json.load(open('$OUT/ab-proj-${v%%=*}.json'))['problems']
for p in d['problems']: print('$v', p['name'], p.get('status'), p.get('ember_ms'), 'eager', p.get('eager_ms'), 'compile', p.get('compile_ms'))"
done
fi
if [ "${PART:-ab}" = rest ]; then
timeout 200 python3 bench/knob_sweep.py third_party/KernelBench/level3/33_VanillaRNN.py --precision torch --out "$OUT/ks-rnn.json" \
  --knobs '[{"_on": "wgmma", "BM": 64, "BN": 128, "stages": 4}, {"_on": "wgmma", "BM": 128, "BN": 128, "stages": 3, "persistent": true},
  {"_on": "wgmma", "BM": 128, "BN": 64, "stages": 4}, {"_on": "wgmma", "promote": 8}, {"_on": "wgmma", "promote": 2}, {"_on": "wgmma", "promote": 0}]' 2>&1 | grep -v -i "warn\|__new__" | tail -8
# 35_conv2d_pointwise (TF32 1x1 over NCHW, 0.53x eager: TF32 wgmma reads K-major only, so its input is copied
# first): the `mma` mode, whose fragments are loaded from shared memory in either layout, over the input
# itself (no copy: EMBER_COPY_GEMM_OPERANDS=0)
EMBER_COPY_GEMM_OPERANDS=0 timeout 120 python3 bench/knob_sweep.py kernelbench/level1/35_conv2d_pointwise.py --precision torch --out "$OUT/ks35.json" \
  --knobs '[{"mode": "mma", "BM": 128, "BN": 128, "BK": 16, "WM": 2, "WN": 4, "stages": 3},
  {"mode": "mma", "BM": 128, "BN": 256, "BK": 16, "WM": 2, "WN": 4, "stages": 2}, {"mode": "mma", "BM": 64, "BN": 128, "BK": 16, "WM": 2, "WN": 2, "stages": 3}]' 2>&1 | grep -v -i "warn\|__new__" | tail -4
fi
