#!/usr/bin/env bash
# Thirty-ninth session, after swide became the default: the models again (5 rounds; does ResNet-50 bf16
# hold >= 1.0x torch.compile?), then ResNet-50's kernels beside torch.compile's (where the gap is now).
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 bench/gpu_models.py --only resnet50,bert,llama --dtypes bf16 --rounds 5 --out "$OUT/models.json" 2>&1 | grep case | python3 -c "
import json, sys
for l in sys.stdin:
    try:
        r = json.loads(l)
    except ValueError:
        continue
    print(r['case'], r.get('ember_ms'), 'eager', r.get('eager_ms'), 'compile', r.get('torch_compile_ms'), 'err', r.get('ember_err'))"
EMBER_KEEP_KERNEL_NAMES=1 timeout 150 python3 bench/model_kernel_profile.py --model "resnet50 b32" --top 25 --out "$OUT/resnet-prof.json" 2>&1 | grep -v -i "warn\|cls.__new__" | tail -40
