#!/usr/bin/env bash
# Twenty-sixth session, run i: Nsight Compute on the scores kernels (dQ and dK of the causal bf16
# backward at B 4, H 16, L 1024, D 64): throughput, stall reasons, occupancy.
set -u
. bench/gpu_env.sh
export OUT
for k in 3 4 0; do  # (every kernel is named ember_kernel: the k-th launch of the program)
  timeout 120 ncu --target-processes all -k ember_kernel --launch-skip $k --launch-count 1 --section SpeedOfLight --section WarpStateStats \
    --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section InstructionStats \
    python3 bench/scores_once.py 4 16 1024 64 > "$OUT/ncu-$k.txt" 2>&1
  grep -E "Duration|Throughput|Stall|Issue|Occupancy|Warp Cycles|Executed Ipc|Pipe|Bank" "$OUT/ncu-$k.txt" | head -40
done
