#!/usr/bin/env bash
# For the thirty-ninth session, after 39a: the epilogue knobs as defaults on whole models, one process each
# (ResNet-50 and BERT-base bf16; the Llama prefill if time allows): as built, EMBER_WGMMA_SWIDE=1 (the staged
# 16-byte walk wherever the epilogue loads anything), EMBER_WGMMA_EPAIR=1 (paired column loads). Flip the winner's
# env default (cuda_wgmma_epilogue.py), then the project suite (bench/gpu_session37c.sh, two calls).
set -u
. bench/gpu_env.sh
export OUT
for v in base EMBER_WGMMA_SWIDE=1 EMBER_WGMMA_EPAIR=1; do
  env $([ $v = base ] || echo $v) timeout 150 python3 bench/gpu_models.py --only resnet50,bert,llama --dtypes bf16 --rounds 3 \
    --out "$OUT/models-${v#EMBER_WGMMA_}.json" 2>&1 | grep case | python3 -c "
import json, sys
for l in sys.stdin:
    try:
        r = json.loads(l)
    except ValueError:
        continue
    print('$v', r['case'], r.get('ember_ms'), 'eager', r.get('eager_ms'), 'compile', r.get('torch_compile_ms'), 'err', r.get('ember_err'))"
done
