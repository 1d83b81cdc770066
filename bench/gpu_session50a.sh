#!/usr/bin/env bash
# Prepared in the forty-ninth session for the next: what the library runs where Ember's default trails it most (the
# Llama-1B prefill's qkv at 64% of cuBLAS, o 69%, BERT attention scores 71%), then ncu on the two sides of qkv.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 bench/library_kernels.py --suite prefill,bert,conv3x3,4096,short-k --out "$OUT/library-kernels.json" 2>&1 \
  | grep -v -i warn | tail -40
SECT="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
for c in "prefill512 qkv" "prefill512 o"; do
  f=$(echo $c | tr ' ' _)
  timeout 150 ncu --kernel-name regex:ember --launch-skip 3 --launch-count 1 $SECT python3 bench/contraction_once.py --case "$c" > "$OUT/ncu-ember-$f.txt" 2>&1
  timeout 150 ncu --kernel-name regex:"gemm|xmma|cutlass|sm90|nvjet" --launch-skip 3 --launch-count 1 $SECT python3 bench/contraction_once.py --case "$c" --library > "$OUT/ncu-library-$f.txt" 2>&1
done
# the cluster split's 128 x 256 form (21.4 us on qkv against 17.9, down 50.9 against 36.2 at 128 x 128): is the sum
# through distributed shared memory the cost (gpu-session49-2026-11-29/b/)?
timeout 150 ncu --kernel-name ember_kernel --launch-skip 3 --launch-count 1 $SECT python3 bench/contraction_once.py --case "prefill512 qkv" \
  --overlay '{"BN": 256, "stages": 3, "cluster": 2, "persistent": false, "sown": false, "shalf": false}' > "$OUT/ncu-ember-qkv-c2x256.txt" 2>&1
for f in "$OUT"/ncu-*.txt; do echo "== $f"; grep -E "^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Compute \(SM\)|Issue Slots Busy|Executed Ipc|Grid Size|Block Size|Cluster|Registers Per|Shared Memory Config|No Eligible|Warp Cycles Per Issued" "$f" | cut -c1-150 | head -24; done
