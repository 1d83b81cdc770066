#!/usr/bin/env bash
# For the forty-seventh session, after gpu_session47a.sh's A/Bs (bench/results/gpu-session47-2026-11-29/a-c):
# 1: the scans' CUDA tests (pvec's exclusive prefix now shuffled, not subtracted: real KB 90's cumprod was NaN
#    under pvec), the strips' (knob `sfewest`), then the real KernelBench's scans with pvec the default (A/B against
#    EMBER_SCAN_PVEC=0 in the same run) and sfewest as an overlay on the depthwise convs 82 / 84 / 85.
# 2: issue 19's contraction search against the default, with the library's time in the same run (the headroom).
set -u
. bench/gpu_env.sh
export OUT
K=third_party/KernelBench/level1
case "${PART:-1}" in
1)
  python3 -m pytest -q -p no:warnings -o addopts="" tests/test_scan.py tests/test_cuda_strip.py -m cuda 2>&1 | tail -3
  for p in 1 0; do
    EMBER_SCAN_PVEC=$p timeout 200 python3 bench/kernelbench.py third_party/KernelBench --seeds 2 --level 1 \
      --ember-precision torch $([ $p = 0 ] && echo --no-compile) --only 89_cumsum,90_cumprod,91_cumsum_reverse,92_cumsum_exclusive,93_masked_cumsum \
      --out "$OUT/scans-pvec$p.json" 2>&1 | grep -v -i warn | tail -2 | head -1
    python3 -c "
import json
for p in json.load(open('$OUT/scans-pvec$p.json'))['problems']: print('pvec$p', p['name'][:24], p.get('correct'), round(p.get('ember_ms') or 0, 3), round(p.get('speedup_vs_eager') or 0, 2), round(p.get('speedup_vs_compile') or 0, 2))"
  done
  timeout 200 python3 bench/knob_sweep.py $K/82_conv_depthwise_2D_square_input_square_kernel.py \
    $K/84_conv_depthwise_2D_asymmetric_input_square_kernel.py $K/85_conv_depthwise_2D_asymmetric_input_asymmetric_kernel.py \
    --precision torch --knobs '[{"_on": "thread", "sfewest": true}]' --out "$OUT/sfewest.json" 2>&1 | grep -v -i warn | grep -v "^  " ;;
2)
  timeout 570 python3 bench/contraction_search.py --time-limit 18 --out "$OUT/contraction-search.json" 2>&1 | grep -v -i warn | tail -22 ;;
esac
# 3: bf16 / f16 MN-major rows as two runs copied by TMA (EMBER_WGMMA_MN_RUNS16; the ResNet 1x1 conv over NCHW
#    ran in `mma` with its pixels gathered: 75 us against cuDNN's 22, e/): its CUDA tests, the wgmma suite's, and
#    the contraction search's 1x1 row with the library beside it.
if [ "${PART:-1}" = 3 ]; then
  python3 -m pytest -q -p no:warnings -o addopts="" tests/test_wgmma_mn_runs16.py tests/test_wgmma.py -m cuda 2>&1 | tail -3
  timeout 200 python3 bench/contraction_search.py --time-limit 18 --only conv1x1 --out "$OUT/mnruns16.json" 2>&1 | grep -v -i warn | tail -3
fi
# 4: short-K wgmma rings (bench/short_k_ab.py: 1x1 convs and a K = 256 GEMM under stage / pingpong / persistent overlays)
if [ "${PART:-1}" = 4 ]; then
  timeout 280 python3 bench/short_k_ab.py --out "$OUT/short-k.json" 2>&1 | grep -v -i warn | tail -30
fi
# 5: the same cases persistent (the ring runs into the next tile while the consumers store this one's outputs)
if [ "${PART:-1}" = 5 ]; then
  SHORT_K_CFGS='[null, {"persistent": true}, {"persistent": true, "stages": 4}, {"persistent": true, "BN": 128, "stages": 6},
    {"persistent": true, "BM": 64, "BN": 128, "stages": 8}, {"persistent": true, "BM": 64, "BN": 256, "stages": 4},
    {"persistent": true, "BM": 64, "BN": 64, "stages": 8}]' \
    timeout 250 python3 bench/short_k_ab.py --out "$OUT/short-k-persistent.json" 2>&1 | grep -v -i warn | tail -30
fi
# 6: the short-K persistent default (codegen/cuda_wgmma_default.py short_k_persistent): CUDA tests, the defaults timed
if [ "${PART:-1}" = 6 ]; then
  python3 -m pytest -q -p no:warnings -o addopts="" tests/test_wgmma_short_k.py tests/test_wgmma_mn_runs16.py -m cuda 2>&1 | tail -2
  SHORT_K_CFGS='[null]' timeout 150 python3 bench/short_k_ab.py --out "$OUT/short-k-default.json" 2>&1 | grep -v -i warn | tail -6
fi
