#!/usr/bin/env bash
# For the forty-sixth session, first: the forty-fifth's builds never run on a GPU — the short-window rule's CUDA
# test and its default (real KernelBench 45: 10.7 ms in warp mode, 4.1 ms as a thread-mode overlay), the general
# call path's buffer lookups and one multi-tensor copy of the mutated buffers (the BatchNorm problems in training
# mode: real KernelBench 22_EfficientNetB0 ran 11.7 ms for 3.0 ms of kernels), then the project suite's level 1
# whole on one build (the forty-fifth's 1.529x over all 78 combined two calls).
set -u
. bench/gpu_env.sh
export OUT
python3 -m pytest -q -p no:warnings -o addopts="" tests/test_short_windows.py tests/test_cuda_strip.py tests/test_cuda_call_reuse.py 2>&1 | tail -2
timeout 150 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
  --only 22_batchnorm2d_train,11_conv2d_batchnorm_relu,20_depthwise_conv,04_linear_batchnorm,03_resnet_basic,04_mobilenetv2 \
  --out "$OUT/kb-mutations.json" 2>&1 | grep -v -i warn | tail -6
timeout 300 python3 bench/kernelbench.py third_party/KernelBench --seeds 2 --trials 30 --warmup 3 --level 3 --ember-precision torch \
  --precision-fallback --only 19_MobileNetV1,20_MobileNetV2,22_EfficientNetB0,23_EfficientNetB1 \
  --out "$OUT/real-mobile.json" 2>&1 | grep -v -i warn | tail -6
timeout 100 python3 bench/kernelbench.py third_party/KernelBench --seeds 2 --level 1 --ember-precision torch \
  --only 45_Average,44_Average,41_Max_Pooling --out "$OUT/real-pools.json" 2>&1 | grep -v -i warn | tail -6
# cols mode's pixel strips (knob `pstrip`, search-only, never run on a GPU): their CUDA tests ran above
# (test_cuda_strip.py); the channels-last depthwise convs of the project's MobileNet blocks and level 2's 20
timeout 200 python3 bench/knob_sweep.py kernelbench/level3/04_mobilenetv2_blocks.py kernelbench/level2/20_depthwise_conv_batchnorm_relu6.py \
  --precision torch --knobs '[{"_on": "cols", "pstrip": 2}, {"_on": "cols", "pstrip": 4}]' --out "$OUT/pstrip.json" 2>&1 | grep -v -i warn | grep -v "^  "
