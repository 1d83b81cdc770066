#!/usr/bin/env bash
# For the fortieth session: short thread-mode windows unrolled by default (EMBER_THREAD_UNROLL=1, built in the
# thirty-ninth, untimed: the depthwise conv 34 at 0.98x eager runs ~25 instructions per tap rolled, 0.83 TB/s),
# on the project's window problems, base against the flag, one process each.
set -u
. bench/gpu_env.sh
export OUT
timeout 60 python3 -m pytest -m cuda tests/test_cuda_thread_unroll.py -p no:cacheprovider -p no:warnings -q 2>&1 | tail -1
for v in base EMBER_THREAD_UNROLL=1; do
  env $([ $v = base ] || echo $v) timeout 250 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 34_conv2d_depthwise,20_depthwise,42_avgpool3d,41_maxpool2d,04_mobilenetv2,12_conv2d_groupnorm --out "$OUT/kb-${v%%=*}.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "
import json; d = json.load(open('$OUT/kb-${v%%=*}.json'))
for p in d['problems']: print('$v', p['name'], p.get('status'), round(p.get('ember_ms') or 0, 3), 'eager', round(p.get('eager_ms') or 0, 3), round(p.get('speedup_vs_eager') or 0, 2))"
done
