#!/usr/bin/env bash
# Forty-sixth session: the thread-window tests (gridcap 1 over a capped grid, the 27-tap unroll, a remainder strip)
# and an A/B of the strip's threshold (EMBER_STRIP_MIN_SAVING 0.25 -> 0.15 / 0.2): real KB 41's 8 dilated taps
# (4 outputs share 22% of their loads: unstripped at 0.25) and the project pools the lower threshold strips.
set -u
. bench/gpu_env.sh
export OUT
python3 -m pytest -q -p no:warnings -o addopts="" tests/test_thread_window.py tests/test_cuda_strip.py 2>&1 | tail -2
for s in 0.25 0.15; do
  EMBER_STRIP_MIN_SAVING=$s timeout 100 python3 bench/kernelbench.py third_party/KernelBench --seeds 2 --level 1 --ember-precision torch \
    --only 41_Max --no-compile --out "$OUT/real41-$s.json" 2>&1 | grep -v -i warn | tail -2 | head -1
  EMBER_STRIP_MIN_SAVING=$s timeout 100 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 13_conv2d_hardswish,17_convtranspose2d_maxpool,02_lenet5,08_vgg_small --no-compile --out "$OUT/kb-$s.json" 2>&1 | grep -v -i warn | tail -2 | head -1
  python3 -c "
import json
for f in ('$OUT/real41-$s.json', '$OUT/kb-$s.json'):
    for p in json.load(open(f))['problems']: print('$s', p['name'][:30], p.get('correct'), round(p.get('ember_ms') or 0, 4), round(p.get('speedup_vs_eager') or 0, 2))"
done
