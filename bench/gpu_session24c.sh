#!/usr/bin/env bash
# Twenty-fourth session, run c: level-2 conv problems that lose to torch.compile — per-kernel time and
# DRAM bytes under ncu (91 ConvTranspose2d+softmax over channels, 5 ConvTranspose2d+tanh, 7 Conv3d+
# activations), then 91 and 5 through the runner (softmax over channels read by lanes along the row:
# cuda_schedule._lanes_coalesced).
set -u
. bench/gpu_env.sh
K=third_party/KernelBench
for p in ${NCU_PROBLEMS:-level2/91_ level2/5_ level2/7_}; do
  echo "== $p"
  timeout 120 ncu --clock-control none --kernel-name regex:'^k[0-9]+_' --launch-skip 6 --launch-count 4 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    python3 bench/profile_problem.py $K/${p}*.py --precision torch 2>&1 | grep -E "^  k[0-9]|gpu__time|dram__bytes|sm__throughput" | head -24
done
for p in ${PROBLEMS:-level2/91_ level2/5_}; do
  timeout 70 python3 bench/kernelbench.py $K/${p}*.py --seeds 2 --trials 30 --warmup 3 --ember-precision torch \
    --out "$OUT/kb-$(basename $p).json" 2>&1 | grep -v -i warn | tail -3
done
