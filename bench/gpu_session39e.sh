#!/usr/bin/env bash
# Thirty-ninth session, last call: ResNet-50 and BERT in f32 with swide the default (issue 19 asks for
# them too), then BERT bf16's kernels under the knob overlays (which defaults come next).
set -u
. bench/gpu_env.sh
export OUT
timeout 140 python3 bench/gpu_models.py --only resnet50,bert --dtypes f32 --rounds 3 --out "$OUT/models-f32.json" 2>&1 | grep case | python3 -c "
import json, sys
for l in sys.stdin:
    try:
        r = json.loads(l)
    except ValueError:
        continue
    print(r['case'], r.get('dtype'), r.get('ember_ms'), 'eager', r.get('eager_ms'), 'compile', r.get('torch_compile_ms'), 'err', r.get('ember_err'))"
timeout 150 python3 bench/model_knob_sweep.py --model "bert-base b32x128" --top 15 --out "$OUT/bert-knobs.json" --knobs '[{"swide": false},
 {"epair": true}, {"persistent": true}, {"BM": 128, "BN": 128}, {"BM": 128, "BN": 256}, {"BM": 64, "BN": 128, "occupancy": 2}]' 2>&1 | grep -v -i "warn\|cls.__new__" | tail -25
