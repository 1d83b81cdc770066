#!/usr/bin/env bash
# Twenty-fifth session, run a: the whole CUDA suite on this build (kernels now compiled once per
# distinct body), the level-3 problems of the real KernelBench sample never measured (MinGPT
# attention, NetVLAD x2, Mamba2, ReLU self-attention), and the sample's four recurrent problems at
# 64 steps instead of 512 (eager, torch.compile and Ember all scale with the steps; the full length
# takes minutes to plan on the VM), to learn what a step costs each.
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -4
KB="python3 bench/kernelbench.py third_party/KernelBench --level 3 --seeds 2 --trials 30 --warmup 3 --ember-precision torch"
timeout 200 $KB --only 43_MinGPT,46_NetVlad,47_NetVlad,49_Mamba2ReturnFinal,50_ReLUSelf --out "$OUT/real-kb-l3-rest.json" 2>&1 | grep -v -i warn | grep -v "^  " | tail -12
timeout 330 $KB --only 36_LSTMHn,39_GRU,40_GRUHidden,42_GRUBidirectionalHidden --set sequence_length=64 --set seq_len=64 \
  --out "$OUT/real-kb-l3-recurrent-64.json" 2>&1 | grep -v -i warn | grep -v "^  " | tail -12
