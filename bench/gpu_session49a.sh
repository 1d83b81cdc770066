#!/usr/bin/env bash
# For the forty-ninth session (prepared in the forty-eighth after its device time ran out).
# 1: the shalf default at the large GEMMs (capped at 48 k slices until timed: EMBER_WGMMA_SHALF_MAX_SLICES=0 lifts it), then the
#    CUDA tests of the k split over a cluster (wgmma knob `cluster`, codegen/cuda_wgmma_kcluster.py: built untimed).
# 2: the k split over a cluster as the default (EMBER_WGMMA_KCLUSTER=1 EMBER_SPLIT_LONG_K=0) and 128 x 192 tiles in the
#    default's rate table (EMBER_WGMMA_WAVE192=1) against the default on the mid-size GEMMs and 3x3 convs (the Llama
#    prefill's qkv / o / down at 59-65% of cuBLAS), then overlays there (clusters; the search's ping-pong 64 x 128 for o).
# 3: whole models under it; 4: the project suite (LEVELS=1 BUDGET=380 bash bench/gpu_session37c.sh; LEVELS="2 3" BUDGET=170).
set -u
. bench/gpu_env.sh
export OUT
KC='{"EMBER_WGMMA_KCLUSTER": "1", "EMBER_SPLIT_LONG_K": "0"}'
case "${PART:-1}" in
1)
  timeout 150 python3 bench/short_k_ab.py --suite "4096^3,8192^3" --envs '[{}, {"EMBER_WGMMA_SHALF_MAX_SLICES": "0"}]' \
    --out "$OUT/large-shalf.json" 2>&1 | grep -v -i warn | tail -12
  timeout 240 python3 -m pytest -m cuda tests/test_wgmma_kcluster.py tests/test_wgmma_short_k.py -p no:cacheprovider \
    -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
  echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head -5; tail -1 "$OUT/tests.log" ;;
2)
  timeout 240 python3 bench/short_k_ab.py --suite prefill,bert,conv3x3 --envs "[{}, $KC, {\"EMBER_WGMMA_WAVE192\": \"1\"}]" \
    --out "$OUT/kcluster-default.json" 2>&1 | grep -v -i warn | tail -40
  SHORT_K_CFGS='[null, {"BM": 128, "BN": 128, "stages": 4, "cluster": 2, "persistent": false, "sown": false, "shalf": false},
    {"BM": 128, "BN": 256, "stages": 3, "cluster": 2, "persistent": false, "sown": false, "shalf": false},
    {"BM": 128, "BN": 256, "stages": 3, "cluster": 4, "persistent": false, "sown": false, "shalf": false},
    {"BM": 64, "BN": 128, "stages": 8, "pingpong": true, "group": 8, "sown": false, "shalf": false}]' \
    EMBER_SPLIT_LONG_K=0 timeout 150 python3 bench/short_k_ab.py --suite "prefill512 qkv,prefill512 o,prefill512 down" \
    --out "$OUT/kcluster-overlays.json" 2>&1 | grep -v -i warn | tail -12 ;;
3)
  for v in base EMBER_WGMMA_KCLUSTER=1,EMBER_SPLIT_LONG_K=0; do
    env $([ $v = base ] || echo $v | tr , ' ') timeout 250 python3 bench/gpu_models.py --only resnet50,bert-base,llama --dtypes bf16 \
      --rounds 3 --out "$OUT/models-$(echo $v | tr -d =,).json" 2>&1 | python3 bench/model_rows.py $v
  done ;;
esac
