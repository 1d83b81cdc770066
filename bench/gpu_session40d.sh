#!/usr/bin/env bash
# For the fortieth session: the wgmma knob `pingpong` (built in the thirty-ninth, untimed): its CUDA tests, then
# every wgmma launch of BERT-base and ResNet-50 bf16 under ping-pong overlays (BERT's FFN up-projections at
# ~345 TFLOP/s, k*_cast 56 us: the epilogue after each tile's products; ResNet's residual convs, all epilogue).
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_wgmma_pingpong.py -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/pp_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/pp_tests.log") FAILED"; grep '^FAILED' "$OUT/pp_tests.log" | head -5; tail -1 "$OUT/pp_tests.log"
for m in "bert-base b32x128" "resnet50 b32"; do
  timeout 200 python3 bench/model_knob_sweep.py --model "$m" --top 12 --out "$OUT/knobs-${m%% *}.json" --knobs '[{"BM": 64, "BN": 128, "pingpong": true, "stages": 6},
   {"BM": 64, "BN": 256, "pingpong": true, "stages": 4}, {"BM": 64, "BN": 128, "pingpong": true, "stages": 6, "group": 8}, {"persistent": true}]' 2>&1 \
    | grep -v -i "warn\|cls.__new__" | tail -16
done
