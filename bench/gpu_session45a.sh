#!/usr/bin/env bash
# For the forty-fifth session: rewrite 3 (kernel/layout_windows.py, depthwise weights channels-last, windows under 16 taps)
# on the real KernelBench's MobileNet / EfficientNet problems, with the float32 fallback for TF32 failures (20_MobileNetV2
# failed correctness at TF32 with and without rewrite 3 in gpu-session44 g/). Then 22_EfficientNetB0's launches with the
# rewrite off / on (h/ measured the build that relaid its 5x5 windows too: 2614 -> 2988 us).
set -u
. bench/gpu_env.sh
export OUT
timeout 330 python3 bench/kernelbench.py third_party/KernelBench --seeds 2 --trials 30 --warmup 3 --level 3 --ember-precision torch \
  --precision-fallback --only 19_MobileNetV1,20_MobileNetV2,21_EfficientNetMBConv,22_EfficientNetB0,23_EfficientNetB1 \
  --out "$OUT/real-mobile.json" 2>&1 | grep -v -i warn | grep -v "^  " | tail -8
python3 -c "
import json; d = json.load(open('$OUT/real-mobile.json'))
for p in d['problems']: print(p['name'], p['status'], p.get('ember_ms'), p.get('eager_ms'), p.get('compile_ms'), p.get('max_abs_err'))"
WCS="0 1" bash bench/gpu_session44h.sh 2>&1 | grep "== ember"
