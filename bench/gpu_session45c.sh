#!/usr/bin/env bash
# For the forty-fifth session: the reused outputs' CUDA test, the call path's pieces (cuda.bindings vs ctypes
# graph launch), and the KernelBench protocol's idle-start latency on short problems under both launch modes.
set -u
. bench/gpu_env.sh
export OUT
python3 -m pytest -q -p no:warnings -o addopts="" tests/test_cuda_call_reuse.py 2>&1 | tail -3
for m in bindings ctypes; do
  echo "== EMBER_GRAPH_LAUNCH=$m"
  EMBER_GRAPH_LAUNCH=$m python3 bench/call_path_profile.py kernelbench/level1/10_relu.py --small --out "$OUT/profile-$m.json" 2>&1 | grep " us$"
done
P=kernelbench/level1
for m in bindings ctypes; do
  echo "== EMBER_GRAPH_LAUNCH=$m"
  EMBER_GRAPH_LAUNCH=$m python3 bench/call_latency.py $P/13_tanh.py $P/10_relu.py $P/28_mean_last_dim.py $P/05_matmul_small_k.py \
    $P/06_matvec.py $P/43_global_avgpool.py kernelbench/level2/20_depthwise_conv_batchnorm_relu6.py --out "$OUT/call-latency-$m.json" 2>&1 | grep "^{"
done
