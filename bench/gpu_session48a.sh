#!/usr/bin/env bash
# For the forty-eighth session: the forty-seventh's untimed builds (bench/results/gpu-session47-2026-11-29/README.md).
# 1: the short-K persistent default's CUDA test and knob `sown`'s (the staged epilogue in a buffer of its own, so a
#    persistent tile stages its outputs), then short-K cases under sown overlays against the library (bench/short_k_ab.py).
# 2: the mid-size GEMMs under persistent / sown overlays.
# 3: issue 19's contraction search with the library beside it (bench/contraction_search.py; e/ of the 47th: 1.022x).
# 4: the project suite in one build: LEVELS=1 BUDGET=380 bash bench/gpu_session37c.sh; LEVELS="2 3" BUDGET=170 ...
set -u
. bench/gpu_env.sh
export OUT
case "${PART:-1}" in
1)
  python3 -m pytest -q -p no:warnings -o addopts="" tests/test_wgmma_short_k.py tests/test_wgmma_mn_runs16.py tests/test_wgmma_wave_tiles.py -m cuda 2>&1 | tail -3
  SHORT_K_CFGS='[null, {"persistent": true, "sown": true, "BM": 128, "BN": 128, "stages": 4, "group": 8},
    {"persistent": true, "sown": true, "swide": true, "BM": 128, "BN": 128, "stages": 4, "group": 8},
    {"persistent": true, "sown": true, "BM": 64, "BN": 128, "stages": 8, "group": 8},
    {"persistent": true, "sown": true, "swide": true, "BM": 64, "BN": 128, "stages": 8, "group": 8},
    {"persistent": true, "sown": true, "BM": 64, "BN": 64, "stages": 8},
    {"persistent": true, "sown": true, "shalf": true, "BM": 128, "BN": 256, "stages": 3, "group": 8},
    {"persistent": true, "sown": true, "shalf": true, "BM": 128, "BN": 128, "stages": 5, "group": 8}]' \
    timeout 400 python3 bench/short_k_ab.py --out "$OUT/short-k-sown.json" 2>&1 | grep -v -i warn | tail -30
  # the images as a batch (off by default until its CUDA tests above pass): the 28^2 conv copied vs uncopied
  SHORT_K_CFGS='[null]' EMBER_WGMMA_COLUMN_BATCH=1 timeout 120 python3 bench/short_k_ab.py --out "$OUT/column-batch.json" 2>&1 | grep -v -i warn | tail -5 ;;
2)
  # the mid-size GEMMs (52-71% of cuBLAS in the 47th's e/) persistent with the epilogue staged in its own buffer
  SHORT_K_CFGS='[null, {"persistent": true, "group": 8}, {"persistent": true, "sown": true, "BM": 128, "BN": 128, "stages": 4, "group": 8},
    {"persistent": true, "sown": true, "swide": true, "BM": 128, "BN": 128, "stages": 4, "group": 8},
    {"persistent": true, "sown": true, "BM": 64, "BN": 256, "stages": 3, "group": 8},
    {"persistent": true, "sown": true, "shalf": true, "BM": 128, "BN": 256, "stages": 3, "group": 8},
    {"BM": 128, "BN": 192, "stages": 5}, {"BM": 64, "BN": 192, "stages": 7}, {"BM": 128, "BN": 192, "stages": 5, "persistent": true}]' \
    timeout 300 python3 bench/short_k_ab.py --suite prefill,bert --out "$OUT/midsize-sown.json" 2>&1 | grep -v -i warn | tail -30 ;;
3)
  timeout 570 python3 bench/contraction_search.py --time-limit 18 --out "$OUT/contraction-search.json" 2>&1 | grep -v -i warn | tail -22 ;;
esac
