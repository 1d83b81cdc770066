#!/usr/bin/env bash
# Forty-fourth session: rewrite 3 (kernel/layout_windows.py: a depthwise conv's weights with the channels last, so its
# kernel takes the column mode's vector lanes). Project 04_mobilenetv2_blocks' launches (its depthwise kernels were
# 184 and 50 us as a thread per output, 44f), the problem with the rewrite off / on twice each (its timing is
# bimodal: 1.03 or 1.2-1.3 ms in 44f either way), then real KernelBench 20_MobileNetV2 and 22_EfficientNetB0 off / on.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 bench/problem_launches.py kernelbench/level3/04_mobilenetv2_blocks.py --top 8 --out "$OUT/04-launches.json" 2>&1 \
  | grep -v -i warn | grep -v "cls.__new__" | head -12
for wc in 0 1 0 1; do
  EMBER_WINDOW_CONSTANTS=$wc timeout 80 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch --level 3 \
    --only 04_ --out "$OUT/kb04-wc$wc.json" 2>&1 | grep -v -i warn | tail -0
  python3 -c "import json; p = json.load(open('$OUT/kb04-wc$wc.json'))['problems'][0]; print('WC=$wc', p['status'], p['ember_ms'], p['eager_ms'], p['compile_ms'])"
done
for wc in 0 1; do
  EMBER_WINDOW_CONSTANTS=$wc timeout 130 python3 bench/kernelbench.py third_party/KernelBench --seeds 2 --trials 30 --warmup 3 --level 3 \
    --ember-precision torch --only 20_MobileNetV2,22_EfficientNetB0 --out "$OUT/real-wc$wc.json" 2>&1 | grep -v -i warn | tail -0
  python3 -c "
import json; d = json.load(open('$OUT/real-wc$wc.json'))
for p in d['problems']: print('WC=$wc', p['name'], p['status'], p.get('ember_ms'), p.get('eager_ms'), p.get('compile_ms'))"
done
