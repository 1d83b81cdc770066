#!/usr/bin/env bash
# For the fortieth session (prepared in the thirty-ninth, all untimed there): the CUDA tests of what was
# built on the CPU, then each thing A/B on what it was built for (ResNet-50 here; bench/gpu_session40b.sh the rest).
#  - cols knob `own` (EMBER_COLS_OWN=1: a warp per 32 x cvec outputs of a short window; ResNet-50's max
#    pool k3 was 64 us for 66 MB);
#  - rewrite 0a, the conv over its stride's phases (EMBER_CONV_PHASES=1: ResNet's stem k 392 -> 256 over
#    32-byte pixels, 280 us against cuDNN's 196; the seed conv over 48-channel pixels, 591 us, target 2x eager);
#  - rule 4's short-window exception (EMBER_WINDOW_INLINE=1: the pool recomputes the stem's BatchNorm + ReLU;
#    ResNet-50's k2, 30 us writing a padded copy, goes);
#  - the staged epilogue (swide) at two blocks per SM (occupancy 2 now stages too): ResNet-50's residual
#    1x1 convs (k7 96 us for 115 MB), per launch under the overlays.
set -u
. bench/gpu_env.sh
export OUT
timeout 140 python3 -m pytest -m cuda tests/test_cols_own.py tests/test_conv_phases.py tests/test_wgmma_epilogue_loads.py \
  -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head -5; tail -1 "$OUT/tests.log"
for v in base EMBER_CONV_PHASES=1 EMBER_COLS_OWN=1 EMBER_WINDOW_INLINE=1 EMBER_WINDOW_INLINE=1,EMBER_COLS_OWN=1 \
    EMBER_CONV_PHASES=1,EMBER_WINDOW_INLINE=1,EMBER_COLS_OWN=1; do
  env $([ $v = base ] || echo $v | tr , ' ') timeout 70 python3 bench/gpu_models.py --only resnet50 --dtypes bf16 --rounds 3 \
    --out "$OUT/resnet-$(echo $v | tr -d =,).json" 2>&1 | python3 bench/model_rows.py $v
done
