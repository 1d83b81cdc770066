#!/usr/bin/env bash
# For the forty-first session: the two new defaults A/B (EMBER_WGMMA_SWAP_DEFAULT: few rows against many
# columns in wgmma with the two swapped, persistent, where `mma` ran; 04_matmul_irregular's tf32x3 tile by
# the corrected 64 x 64 rate) on the problems the CPU survey lists (bench/flag_survey.py), then the real
# KernelBench level 1 sample (bench/gpu_real_kb.sh) on this build with what time is left.
set -u
. bench/gpu_env.sh
export OUT
for v in base EMBER_WGMMA_SWAP_DEFAULT=0; do
  env $([ $v = base ] || echo $v) timeout 150 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 38_conv3d,18_conv3d,19_conv3d,04_matmul_irr --out "$OUT/ab-proj-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  env $([ $v = base ] || echo $v) timeout 150 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 2 --ember-precision torch \
    --only ${REAL_ONLY:-71_conv_transposed_2D__asym,78_conv_transposed_2D_asym} --out "$OUT/ab-real-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json
for f in ('proj', 'real'):
    d = json.load(open('$OUT/ab-%s-${v%%=*}.json' % f))
    for p in d['problems']: print('$v', p['name'], p.get('status'), p.get('ember_ms'), 'eager', p.get('eager_ms'), 'compile', p.get('compile_ms'))"
done
KB_S=${KB_S:-380} LEVEL=1 bash bench/gpu_real_kb.sh
