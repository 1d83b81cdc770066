#!/usr/bin/env bash
# Forty-ninth session: the new defaults (k split over a cluster of 2, ping-pong 64 x 128 and 128 x 192 rated, shalf
# uncapped) against each turned off, per GEMM (PART=1) and whole models (PART=2: new against all four off); PART=3: the
# wgmma CUDA tests.
set -u
. bench/gpu_env.sh
export OUT
OLD='{"EMBER_WGMMA_KCLUSTER": "0", "EMBER_WGMMA_PINGPONG_DEFAULT": "0", "EMBER_WGMMA_WAVE192": "0", "EMBER_WGMMA_SHALF_MAX_SLICES": "48"}'
case "${PART:-1}" in
1)
  timeout 280 python3 bench/short_k_ab.py --suite prefill,bert,conv3x3,ragged --envs "[{}, $OLD, {\"EMBER_WGMMA_PINGPONG_DEFAULT\": \"0\"}, {\"EMBER_WGMMA_KCLUSTER\": \"0\"}]" \
    --out "$OUT/defaults.json" 2>&1 | grep -v -i warn | tail -60
  timeout 120 python3 bench/short_k_ab.py --suite epilogue --envs "[{}, $OLD]" --out "$OUT/defaults-epilogue.json" 2>&1 | grep -v -i warn | tail -12 ;;
2)
  for v in new old; do
    env $([ $v = new ] || echo EMBER_WGMMA_KCLUSTER=0 EMBER_WGMMA_PINGPONG_DEFAULT=0 EMBER_WGMMA_WAVE192=0 EMBER_WGMMA_SHALF_MAX_SLICES=48) \
      timeout 280 python3 bench/gpu_models.py --only resnet50,bert-base,llama --dtypes bf16 \
      --rounds 3 --out "$OUT/models-$v.json" 2>&1 | python3 bench/model_rows.py $v
  done ;;
3)
  timeout 400 python3 -m pytest -m cuda tests/test_wgmma_kcluster.py tests/test_wgmma_pingpong.py tests/test_wgmma_short_k.py \
    tests/test_wgmma*.py -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/tests.log" 2>&1
  echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head -8; grep -E "passed|failed" "$OUT/tests.log" | tail -2 ;;
esac
