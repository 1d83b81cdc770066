#!/usr/bin/env bash
# Thirty-sixth session, after 36a-c: the TF32 3x3 conv + mish x2 (KernelBench 14 / 32 with mish) over the
# whole wgmma space (the mish epilogue costs 640 us at the default 64x256, 300 at 128x128: which
# tiles hide it), then the project's KernelBench suite with 36b's winning flags on.
set -u
. bench/gpu_env.sh
export OUT
timeout 170 python3 bench/f32_conv.py --cases 3,2 --tf32 --const-weights --mish --configs 0 --out "$OUT/mish-all.json" 2>&1 | grep -v -i warn | head -90
export EMBER_COPY_GEMM_OPERANDS=1 EMBER_STAGE_SPLIT_PROLOGUES=1 EMBER_WGMMA_MIN_M=32
timeout 400 python3 bench/kernelbench.py kernelbench --device cuda --seeds 5 --ember-precision torch \
  --time-budget ${BUDGET:-330} --out "$OUT/kb.json" 2>&1 | grep -v -i warn | tail -2
python3 -c "
import json; d = json.load(open('$OUT/kb.json')); print('partial', d['partial'], len(d['problems']))
for k, v in d['summary'].items(): print(k, {x: round(y, 3) if isinstance(y, float) else y for x, y in v.items()})"
