#!/usr/bin/env bash
# Twenty-eighth session, run i: Nsight Compute on the megakernel (one decode step, ctx 1024): where
# its GEMV tasks lose to the same code launched as kernels (2.2-2.4 against ~2.9 TB/s).
set -u
. bench/gpu_env.sh
export OUT
timeout 400 ncu -k regex:em_megakernel -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
  python3 bench/megakernel_once.py > "$OUT/ncu-megakernel.txt" 2>&1
grep -v -i warn "$OUT/ncu-megakernel.txt" | grep -E "Throughput|Busy|Hit|Stall|Warp Cycles|Eligible|Issued|Active Warps|Occupancy|Registers|Shared|L1|DRAM|Bandwidth" | head -60
