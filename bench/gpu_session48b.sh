#!/usr/bin/env bash
# For the forty-eighth session: knob `shalf` (with `sown`, persistent) as the default wgmma epilogue for 16-bit
# outputs (EMBER_WGMMA_SHALF), its computed form (bias / activation / residual rounded in the registers, then staged),
# and the images as a batch on by default (EMBER_WGMMA_COLUMN_BATCH).
# 1: CUDA tests; each case's default under the old and new defaults (bench/short_k_ab.py --envs); shalf over few tiles.
# 2: whole models (bench/gpu_models.py) under the new and old defaults.
# 3: the computed form's tiles (overlays on the epilogue cases), then whole models with it on ("columns", "all").
set -u
. bench/gpu_env.sh
export OUT
OLD='{"EMBER_WGMMA_SHALF": "0", "EMBER_WGMMA_COLUMN_BATCH": "0"}'
case "${PART:-1}" in
1)
  timeout 200 python3 -m pytest -m cuda tests/test_wgmma_short_k.py tests/test_wgmma_mn_runs16.py -p no:cacheprovider \
    -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
  echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head -5; tail -1 "$OUT/tests.log"
  timeout 120 python3 bench/short_k_ab.py --envs "[$OLD, {}]" --out "$OUT/short-k.json" 2>&1 | grep -v -i warn | tail -12
  timeout 150 python3 bench/short_k_ab.py --suite prefill,bert --envs "[$OLD, {}]" --out "$OUT/midsize.json" 2>&1 | grep -v -i warn | tail -20
  timeout 150 python3 bench/short_k_ab.py --suite epilogue --envs "[$OLD, {}, {\"EMBER_WGMMA_SHALF\": \"all\"}]" \
    --out "$OUT/epilogue.json" 2>&1 | grep -v -i warn | tail -20
  SHORT_K_CFGS='[null, {"persistent": true, "sown": true, "shalf": true, "stages": 5, "group": 8},
    {"persistent": true, "sown": true, "shalf": true, "BM": 64, "BN": 128, "stages": 8, "group": 8}]' \
    timeout 100 python3 bench/short_k_ab.py --suite "prefill512 qkv,prefill512 o,prefill512 down" --out "$OUT/few-tiles.json" 2>&1 | grep -v -i warn | tail -12 ;;
2)
  for v in base EMBER_WGMMA_SHALF=0,EMBER_WGMMA_COLUMN_BATCH=0; do
    env $([ $v = base ] || echo $v | tr , ' ') timeout 250 python3 bench/gpu_models.py --only resnet50,bert-base,llama --dtypes bf16 \
      --rounds 3 --out "$OUT/models-$(echo $v | tr -d =,).json" 2>&1 | python3 bench/model_rows.py $v
  done ;;
3)
  SHORT_K_CFGS='[null, {"persistent": true, "sown": true, "shalf": true, "BM": 128, "BN": 256, "stages": 3, "group": 8},
    {"persistent": true, "sown": true, "shalf": true, "BM": 128, "BN": 128, "stages": 5, "group": 8},
    {"persistent": true, "sown": true, "shalf": true, "BM": 64, "BN": 256, "stages": 4, "group": 8}]' \
    timeout 150 python3 bench/short_k_ab.py --suite epilogue --out "$OUT/epilogue-tiles.json" 2>&1 | grep -v -i warn | tail -20
  for v in base EMBER_WGMMA_SHALF=columns EMBER_WGMMA_SHALF=all; do
    env $([ $v = base ] || echo $v) timeout 250 python3 bench/gpu_models.py --only resnet50,bert-base,llama --dtypes bf16 \
      --rounds 3 --out "$OUT/models-$(echo $v | tr -d =,).json" 2>&1 | python3 bench/model_rows.py $v
  done ;;
4)  # shalf over the flattened columns (merged_runs: the 28^2 NCHW conv), its CUDA tests, ResNet-50
  timeout 150 python3 -m pytest -m cuda tests/test_wgmma_short_k.py -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
  echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head -5; tail -1 "$OUT/tests.log"
  timeout 100 python3 bench/short_k_ab.py --envs '[{}]' --out "$OUT/short-k.json" 2>&1 | grep -v -i warn | tail -6
  timeout 100 python3 bench/gpu_models.py --only resnet50 --dtypes bf16 --rounds 3 --out "$OUT/resnet.json" 2>&1 | python3 bench/model_rows.py base ;;
esac
