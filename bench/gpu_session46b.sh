#!/usr/bin/env bash
# Forty-sixth session: thread-mode windows. ncu (this session's call before) showed the real KernelBench's
# pools at 17% of DRAM bandwidth: 44/41/42 a thread per output in ~4M 128-thread blocks (achieved occupancy 36%,
# the blocks too short for the block scheduler), 43's 27 dilated taps rolled in a loop (SMs 88% busy on the tap
# index arithmetic). Now: strips over extents V does not divide (a last strip of the remainder), the unroll on
# every thread-window branch, and knob `gridcap` (grid-stride loops at most N blocks an SM), timed as overlays.
set -u
. bench/gpu_env.sh
export OUT
python3 -m pytest -q -p no:warnings -o addopts="" tests/test_cuda_strip.py tests/test_short_windows.py tests/test_cuda_thread_unroll.py 2>&1 | tail -2
K=third_party/KernelBench/level1
timeout 420 python3 bench/knob_sweep.py $K/44_Average_Pooling_1D.py $K/41_Max_Pooling_1D.py $K/42_Max_Pooling_2D.py \
  $K/43_Max_Pooling_3D.py kernelbench/level2/19_conv3d_softmax_maxpool.py --precision torch \
  --knobs '[{"_on": "thread", "strip": 1, "unroll": 0}, {"_on": "thread", "gridcap": 16}, {"_on": "thread", "gridcap": 64}, {"_on": "thread", "strip": 1, "unroll": 0, "gridcap": 16}]' \
  --out "$OUT/windows.json" 2>&1 | grep -v -i warn | grep -v "^  "
