#!/usr/bin/env bash
# For the thirty-fourth session (prepared in the thirty-third; not run): the project's KernelBench
# suite on the build with the scans (31_cumsum measured 1.07x eager alone in run d; the suite was
# 1.20x eager / 1.17x torch.compile on the thirty-first session's build), and the pointwise conv
# (35, 0.52x eager: a TF32 1x1 conv over NCHW in mma mode — wgmma with the input gathered by the
# producer compiles, `default_takes_wgmma` refuses it) and the irregular matmul (04, 0.66x: 1031 x
# 3079 x 2053 in float32, both operands gathered — mma tf32x3 by default, wgmma tf32x3 a candidate)
# under search="fast", which times them.
set -u
. bench/gpu_env.sh
export OUT
timeout 570 python3 bench/kernelbench.py kernelbench --device cuda --seeds 5 --ember-precision torch \
  --time-budget ${BUDGET:-420} --out "$OUT/kb.json" 2>&1 | grep -v -i warn | tail -2
python3 -c "
import json; d = json.load(open('$OUT/kb.json')); print('partial', d['partial'], len(d['problems']))
for k, v in d['summary'].items(): print(k, {x: round(y, 3) if isinstance(y, float) else y for x, y in v.items()})"
timeout 300 python3 bench/kernelbench.py kernelbench --device cuda --seeds 3 --ember-precision torch --only conv2d_pointwise,matmul_irregular \
  --search fast --search-time 120 --out "$OUT/kb-35-search.json" 2>&1 | grep -v -i warn | tail -2
# issue 19's seed-000 conv at float32 accuracy (TF32 off; target 2x eager): last measured before the
# float32 channels-last layouts (f32-conv-h100-2026-11-26.json: 1356 us, 0.72x eager); now a C = 4
# channels-last copy of the input and wgmma tf32x3 with the input gathered in 16-byte chunks
timeout 200 python3 bench/f32_conv.py --out "$OUT/f32-conv.json" 2>&1 | grep -v -i warn | tail -8
