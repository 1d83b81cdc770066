#!/usr/bin/env bash
# Prepared in the forty-ninth session for the next.
# PART=1: the cluster sum's loads unrolled (knob `cunroll`), stream-K (`streamk`), b multicast (`mcast`), all untimed: CUDA
#   tests, compute-sanitizer, then overlays
#   on the few-tile prefill GEMMs — if 128 x 256 over 2 blocks gets near 128 x 128's cost, widen the default
#   (KCLUSTER_MAX_BN, KCLUSTER_SUM_SLICES in codegen/cuda_wgmma_default.py); if the streamk / mcast tests pass, turn
#   EMBER_SEARCH_UNRUN_KNOBS on by default (codegen/cuda_wgmma_space.py unrun_knobs_on).
# PART=3: stream-K as a default (EMBER_WGMMA_STREAMK=1), per GEMM and in BERT / the Llama prefill.
# PART=2: what the library runs where Ember's default trails it most (the prefill's qkv at 64% of cuBLAS, o 69%, BERT
#   attention scores 71%), then ncu on both sides of qkv and on the cluster's 128 x 256 form.
set -u
. bench/gpu_env.sh
export OUT
case "${PART:-1}" in
1)
  timeout 200 python3 -m pytest -m cuda tests/test_wgmma_kcluster.py tests/test_wgmma_streamk.py tests/test_wgmma_mcast.py -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/tests.log" 2>&1
  echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head -5
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool python3 bench/sanitize_wgmma.py > "$OUT/sanitize-$tool.log" 2>&1
    echo "compute-sanitizer $tool: exit $?"; grep -v -i warn "$OUT/sanitize-$tool.log" | tail -1
  done
  OFF='"persistent": false, "sown": false, "shalf": false, "pingpong": false'
  SHORT_K_CFGS="[null, {\"BM\": 128, \"BN\": 128, \"stages\": 4, \"cluster\": 2, $OFF}, {\"BM\": 128, \"BN\": 128, \"stages\": 4, \"cluster\": 2, \"cunroll\": 4, $OFF},
    {\"BM\": 128, \"BN\": 128, \"stages\": 4, \"cluster\": 2, \"cunroll\": 8, $OFF}, {\"BM\": 128, \"BN\": 256, \"stages\": 3, \"cluster\": 2, $OFF},
    {\"BM\": 128, \"BN\": 256, \"stages\": 3, \"cluster\": 2, \"cunroll\": 4, $OFF}, {\"BM\": 128, \"BN\": 256, \"stages\": 3, \"cluster\": 2, \"cunroll\": 8, $OFF},
    {\"BM\": 128, \"BN\": 256, \"stages\": 3, \"cluster\": 4, \"cunroll\": 4, $OFF}]" \
    timeout 200 python3 bench/short_k_ab.py --suite "prefill512 qkv,prefill512 o,prefill512 down,bert-base b32x128 ff2" \
    --out "$OUT/cunroll.json" 2>&1 | grep -v -i warn | tail -32
  # stream-K (knob `streamk`, built untimed): on the default's tile (its shalf staging kept), 128 x 256, 128 x 128
  SHORT_K_CFGS='[null, {"streamk": true}, {"BM": 128, "BN": 256, "stages": 3, "streamk": true, "group": 8, "persistent": false, "sown": false, "shalf": false, "pingpong": false, "cluster": 1},
    {"BM": 128, "BN": 128, "stages": 5, "streamk": true, "group": 8, "persistent": false, "sown": false, "shalf": false, "pingpong": false, "cluster": 1},
    {"BM": 128, "BN": 256, "stages": 3, "streamk": true, "group": 8, "sown": true, "shalf": true, "pingpong": false, "cluster": 1}]' \
    timeout 240 python3 bench/short_k_ab.py --suite "prefill512,ragged,bert-base,conv3x3 256->256 14x14" \
    --out "$OUT/streamk.json" 2>&1 | grep -v -i warn | tail -45
  # b multicast to a pair of blocks (knob `mcast`, built untimed): the large GEMMs and the mid-size ones
  SHORT_K_CFGS='[null, {"mcast": true}, {"BM": 128, "BN": 256, "stages": 3, "mcast": true, "group": 8, "persistent": false, "sown": false, "shalf": false, "pingpong": false, "cluster": 1},
    {"BM": 128, "BN": 128, "stages": 5, "mcast": true, "group": 8, "persistent": false, "sown": false, "shalf": false, "pingpong": false, "cluster": 1}]' \
    timeout 200 python3 bench/short_k_ab.py --suite "4096^3,8192^3 nt,prefill512 up,prefill512 qkv,ragged,bert-base b32x128 ff1" \
    --out "$OUT/mcast.json" 2>&1 | grep -v -i warn | tail -30 ;;
3)  # stream-K as a default (EMBER_WGMMA_STREAMK=1: down and 8192^3 take it), per GEMM and in whole models
  timeout 200 python3 bench/short_k_ab.py --suite "prefill512,8192^3,ragged" --envs '[{}, {"EMBER_WGMMA_STREAMK": "1"}]' \
    --out "$OUT/streamk-default.json" 2>&1 | grep -v -i warn | tail -16
  for v in base EMBER_WGMMA_STREAMK=1; do
    env $([ $v = base ] || echo $v) timeout 250 python3 bench/gpu_models.py --only bert-base,llama --dtypes bf16 --rounds 3 \
      --out "$OUT/models-$(echo $v | tr -d =).json" 2>&1 | python3 bench/model_rows.py $v
  done ;;
2)
  timeout 120 python3 bench/library_kernels.py --suite prefill,bert,conv3x3,4096,short-k --out "$OUT/library-kernels.json" 2>&1 \
    | grep -v -i warn | tail -40
  SECT="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
  for c in "prefill512 qkv" "prefill512 o" "ragged" "prefill512 up"; do
    f=$(echo $c | tr ' ' _)
    timeout 150 ncu --kernel-name ember_kernel --launch-skip 3 --launch-count 1 $SECT python3 bench/contraction_once.py --case "$c" > "$OUT/ncu-ember-$f.txt" 2>&1
    timeout 150 ncu --kernel-name regex:"gemm|xmma|cutlass|sm90|nvjet" --launch-skip 3 --launch-count 1 $SECT python3 bench/contraction_once.py --case "$c" --library > "$OUT/ncu-library-$f.txt" 2>&1
  done
  timeout 150 ncu --kernel-name ember_kernel --launch-skip 3 --launch-count 1 $SECT python3 bench/contraction_once.py --case "prefill512 qkv" \
    --overlay '{"BN": 256, "stages": 3, "cluster": 2, "persistent": false, "sown": false, "shalf": false}' > "$OUT/ncu-ember-qkv-c2x256.txt" 2>&1
  for f in "$OUT"/ncu-*.txt; do echo "== $f"; grep -E "^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Compute \(SM\)|Issue Slots Busy|Executed Ipc|Grid Size|Block Size|Cluster|Registers Per|Shared Memory Config|No Eligible|Warp Cycles Per Issued" "$f" | cut -c1-150 | head -24; done ;;
esac
