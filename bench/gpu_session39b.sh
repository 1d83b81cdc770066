#!/usr/bin/env bash
# For the thirty-ninth session, after 39a: the epilogue knobs as defaults on whole models, one process each
# (ResNet-50 and BERT-base bf16; the Llama prefill if time allows): as built, EMBER_WGMMA_SWIDE=1 (the staged
# 16-byte walk wherever the epilogue loads anything), EMBER_WGMMA_EPAIR=1 (paired column loads). Flip the winner's
# env default (cuda_wgmma_epilogue.py), then the project suite (bench/gpu_session37c.sh, two calls).
set -u
. bench/gpu_env.sh
export OUT
for v in base EMBER_WGMMA_SWIDE=1 EMBER_WGMMA_EPAIR=1; do
  env $([ $v = base ] || echo $v) timeout 130 python3 bench/gpu_models.py --only resnet50,bert,llama --dtypes bf16 --rounds 3 \
    --out "$OUT/models-${v#EMBER_WGMMA_}.json" 2>&1 | grep case | python3 -c "
import json, sys
for l in sys.stdin:
    try:
        r = json.loads(l)
    except ValueError:
        continue
    print('$v', r['case'], r.get('ember_ms'), 'eager', r.get('eager_ms'), 'compile', r.get('torch_compile_ms'), 'err', r.get('ember_err'))"
done
# k7 (the 56^2 residual conv) under ncu with the 16-byte staged walk, the kernels under their own names
EMBER_KEEP_KERNEL_NAMES=1 EMBER_WGMMA_SWIDE=1 timeout 100 ncu --kernel-name regex:'^k7_' --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
  python3 bench/profile_model.py --model "resnet50 b32" --calls 2 > "$OUT/ncu-k7-swide.txt" 2>&1
echo "ncu rc=$?"; grep -E "Duration|DRAM Throughput|Memory Throughput|Issued Warp|L1TEX|Warp Cycles Per Issued" "$OUT/ncu-k7-swide.txt" | cut -c1-150 | head -12
