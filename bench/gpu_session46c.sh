#!/usr/bin/env bash
# Forty-sixth session, the new thread-window defaults (remainder strips, the unroll on every branch, `gridcap` 64
# for unstripped windows of <= 8 taps): their CUDA tests, then the real KernelBench's level-1 pools with its
# protocol (eager and torch.compile in the same run), and the project problems whose plans changed.
set -u
. bench/gpu_env.sh
export OUT
python3 -m pytest -q -p no:warnings -o addopts="" tests/test_cuda_strip.py tests/test_short_windows.py tests/test_cuda_thread_unroll.py 2>&1 | tail -2
timeout 300 python3 bench/kernelbench.py third_party/KernelBench --seeds 2 --level 1 --ember-precision torch \
  --only 41_Max,42_Max,43_Max,44_Av,45_Av,46_Av --out "$OUT/real-pools.json" 2>&1 | grep -v -i warn | tail -4
python3 -c "
import json; d = json.load(open('$OUT/real-pools.json'))
for p in d['problems']: print(p['name'][:28], p.get('correct'), round(p.get('ember_ms') or 0, 3), round(p.get('speedup_vs_eager') or 0, 2), round(p.get('speedup_vs_compile') or 0, 2))"
timeout 150 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
  --only 04_linear_batchnorm,13_conv2d_hardswish,17_convtranspose2d_maxpool,19_conv3d_softmax,02_lenet5,08_vgg_small \
  --out "$OUT/kb-changed.json" 2>&1 | grep -v -i warn | tail -6
