#!/usr/bin/env bash
# For the forty-fifth session: the host's latency in the KernelBench protocol (bench/call_latency.py) on the
# project suite's short memory-bound problems, eager vs Ember vs eager replayed from a CUDA graph.
set -u
. bench/gpu_env.sh
export OUT
P=kernelbench/level1
python3 bench/call_latency.py $P/13_tanh.py $P/10_relu.py $P/28_mean_last_dim.py $P/05_matmul_small_k.py $P/06_matvec.py \
  $P/43_global_avgpool.py kernelbench/level2/20_depthwise_conv_batchnorm_relu6.py --out "$OUT/call-latency.json" 2>&1 | grep -v -i warn
