#!/usr/bin/env bash
# Thirty-eighth session: ncu over ResNet-50 bf16's k7 (1x1 conv 64 -> 256 + BN + residual + ReLU, 130 us for
# ~115 MB) and its neighbours k8..k10 (second call's launches 62 + 7..10); the prefetch changed nothing (38g).
set -u
. bench/gpu_env.sh
export OUT
timeout 300 ncu --kernel-name ember_kernel --launch-skip 69 --launch-count 4 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
  python3 bench/profile_model.py --model "resnet50 b32" --calls 2 > "$OUT/ncu-k7.txt" 2>&1
echo "ncu rc=$?"; grep -E "launches per call|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Hit|L2 Hit|Compute \(SM\)|Achieved Occupancy|Registers Per|Block Size|Grid Size|Dynamic Shared|Stall|Issued Warp|No Eligible|Warp Cycles Per Issued" "$OUT/ncu-k7.txt" | cut -c1-150 | head -90
