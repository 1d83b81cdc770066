#!/usr/bin/env bash
# For the thirty-ninth session (prepared in the thirty-eighth): ResNet-50 bf16's residual 1x1 convs (k7/k10/k13
# 130 us, k20.. 75, k30.. 43 on the H200: ~1 ms of 2.34; ncu 38h: the epilogue issue-bound, 68% of stalls on
# L1, 8 warps per SM). The knobs over every wgmma kernel of the model itself, each launch timed alone: which
# one each kernel wants (38f's conv_sweep overlays had missed "_on": "wgmma" and changed nothing). Then
# bench/gpu_session39b.sh: the knobs as defaults on whole models. `swide` (the staged walk 16 bytes a lane: k7's SASS
# 2920 -> 1064 instructions, 386 -> 22 LDG) is the first candidate.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_wgmma_epilogue_loads.py tests/test_wgmma.py -k 'epilogue or pair or wide or sepi or residual or matches' -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/epi_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/epi_tests.log") FAILED"; grep '^FAILED' "$OUT/epi_tests.log" | head -5; tail -1 "$OUT/epi_tests.log"
timeout 400 python3 bench/model_knob_sweep.py --model "resnet50 b32" --top 30 --out "$OUT/resnet-knobs.json" --knobs '[{"sepi": true, "swide": true},
 {"epair": true}, {"sepi": true}, {"persistent": true}, {"BM": 128, "BN": 128},
 {"BM": 64, "BN": 256}, {"BM": 64, "BN": 128, "occupancy": 2}, {"sepi": true, "swide": true, "BM": 128, "BN": 128}, {"swide": true, "swunroll": 1},
 {"epair": true, "BM": 64, "BN": 128, "occupancy": 2}]' 2>&1 | grep -v -i "warn\|cls.__new__"
