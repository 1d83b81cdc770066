#!/usr/bin/env bash
# For the fortieth session, after bench/gpu_session40a.sh (its header says what each thing is): the seed-000
# conv with and without rewrite 0a (EMBER_CONV_PHASES=1), then ResNet-50's wgmma launches under the two-block
# overlays, where the staged epilogue (swide) now applies too.
set -u
. bench/gpu_env.sh
export OUT
for v in base EMBER_CONV_PHASES=1 EMBER_CONV_PHASES=slice; do  # the seed-000 conv at float32 accuracy (weights as an input, and as constants)
  env $([ $v = base ] || echo $v) timeout 60 python3 bench/f32_conv.py --cases 0 --configs 2 --out "$OUT/seed-${v#*=}.json" 2>&1 | grep -v -i warn | tail -4 | sed "s/^/$v /"
  env $([ $v = base ] || echo $v) timeout 60 python3 bench/f32_conv.py --cases 0 --configs 2 --const-weights --out "$OUT/seed-const-${v#*=}.json" 2>&1 | grep -v -i warn | tail -4 | sed "s/^/$v const /"
done
timeout 130 python3 bench/model_knob_sweep.py --model "resnet50 b32" --top 20 --out "$OUT/resnet-knobs.json" --knobs '[{"BM": 64, "BN": 128, "occupancy": 2},
 {"BM": 64, "BN": 64, "occupancy": 2}, {"BM": 64, "BN": 128, "occupancy": 2, "swunroll": 2}, {"BM": 128, "BN": 128}]' 2>&1 | grep -v -i "warn\|cls.__new__" | tail -24
