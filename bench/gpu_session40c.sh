#!/usr/bin/env bash
# For the fortieth session: short thread-mode windows unrolled by default (EMBER_THREAD_UNROLL=1) and cols `own`
# by default (EMBER_COLS_OWN=1), both built in the thirty-ninth and untimed, on the project problems whose
# kernels they change (a CPU survey: depthwise convs, pools, and short sums such as split-K combines in 01_mlp
# and 09_llama_block; bench/results/flag-survey-2026-11-28.txt), base against each flag, one process each.
set -u
. bench/gpu_env.sh
export OUT
timeout 60 python3 -m pytest -m cuda tests/test_cuda_thread_unroll.py -p no:cacheprovider -p no:warnings -q 2>&1 | tail -1
ONLY=02_lenet5,34_conv2d_depthwise,41_maxpool2d,42_avgpool3d,12_conv2d_groupnorm,13_conv2d_hardswish,19_conv3d_softmax,20_depthwise,01_mlp,04_mobilenetv2,08_vgg_small,09_llama_block
for v in base EMBER_THREAD_UNROLL=1 EMBER_COLS_OWN=1; do
  env $([ $v = base ] || echo $v) timeout 170 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --no-compile --only $ONLY --out "$OUT/kb-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json; d = json.load(open('$OUT/kb-${v%%=*}.json'))
for p in d['problems']: print('$v', p['name'], p.get('status'), round(p.get('ember_ms') or 0, 3), 'eager', round(p.get('eager_ms') or 0, 3), round(p.get('speedup_vs_eager') or 0, 2))"
done
