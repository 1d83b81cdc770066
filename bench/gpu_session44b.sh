#!/usr/bin/env bash
# Forty-fourth session: where the seed-000 conv's wgmma kernel (k2, ~490 us of 526; the tensor cores' share of
# its 128 x 256 tile would be ~200) spends its time — ncu on the default and on the swapped 128 x 96 RS tile.
set -u
. bench/gpu_env.sh
export OUT
SECT="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
timeout 200 ncu --kernel-name ember_kernel --launch-skip 5 --launch-count 1 $SECT python3 bench/seed_conv_once.py > "$OUT/ncu-default.txt" 2>&1
echo "rc=$?"
timeout 200 ncu --kernel-name ember_kernel --launch-skip 5 --launch-count 1 $SECT python3 bench/seed_conv_once.py \
  --overlay '{"swap": true, "rs": true, "BM": 128, "BN": 96, "stages": 4, "persistent": true}' > "$OUT/ncu-rs96.txt" 2>&1
echo "rc=$?"
for f in "$OUT"/ncu-*.txt; do echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Compute \(SM\)|Issue Slots Busy|Executed Ipc|Shared Memory|Bank|Stall|Warp Cycles Per Issued|No Eligible|Registers Per|Tensor|Pipe" "$f" | cut -c1-140 | head -50; done
