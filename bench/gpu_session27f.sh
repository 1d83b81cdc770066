#!/usr/bin/env bash
# Twenty-seventh session, run f: Nsight Compute on one decode attention at 8K keys (head dim 128):
# DRAM throughput, issue and stall reasons of the flash-decoding kernel.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 ncu -k regex:ember_kernel --launch-skip 2 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
  --section SchedulerStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
  python3 bench/decode_once.py 8192 128 > "$OUT/ncu-decode-8k.txt" 2>&1
grep -E "Duration|DRAM Throughput|Memory Throughput|Issue Slots|Eligible|Active Warps|Stall|No Eligible|One or More|Registers|Achieved Occupancy|Block Limit|L2 Hit|Mem Busy|Max Bandwidth" "$OUT/ncu-decode-8k.txt" | head -40
