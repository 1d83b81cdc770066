#!/usr/bin/env bash
# For the forty-fifth session: thread mode's output strips (codegen/cuda_strip.py, knob `strip`): their CUDA
# tests, then every windowed problem at hand (the project's and the real KernelBench's depthwise convs and
# pools, NCHW) under strip 2 / 4 / 8 (and 4 at 256 threads) against its default.
set -u
. bench/gpu_env.sh
export OUT
python3 -m pytest -q -p no:warnings -o addopts="" tests/test_cuda_strip.py tests/test_cuda_thread_unroll.py 2>&1 | tail -3
R=third_party/KernelBench/level1
timeout 420 python3 bench/knob_sweep.py kernelbench/level1/34_conv2d_depthwise.py kernelbench/level1/41_maxpool2d.py \
  kernelbench/level1/42_avgpool3d.py kernelbench/level2/20_depthwise_conv_batchnorm_relu6.py kernelbench/level2/13_conv2d_hardswish_avgpool.py \
  $R/82_conv_depthwise_2D_square_input_square_kernel.py $R/83_conv_depthwise_2D_square_input_asymmetric_kernel.py \
  $R/84_conv_depthwise_2D_asymmetric_input_square_kernel.py $R/85_conv_depthwise_2D_asymmetric_input_asymmetric_kernel.py \
  $R/86_conv_depthwise_separable_2D.py $R/42_Max_Pooling_2D.py $R/45_Average_Pooling_2D.py $R/43_Max_Pooling_3D.py \
  $R/46_Average_Pooling_3D.py --precision torch \
  --knobs '[{"_on": "thread", "strip": 2}, {"_on": "thread", "strip": 4}, {"_on": "thread", "strip": 8}, {"_on": "thread", "strip": 4, "threads": 256}]' \
  --out "$OUT/strip-sweep.json" 2>&1 | grep -v -i warn | grep -v "^  "
