#!/usr/bin/env bash
# Thirty-eighth session, im2col on by default: ResNet-50 bf16 per Ember launch (program.profile), then the
# project suite's level 1 (levels 2 and 3 ran in 38d).
set -u
. bench/gpu_env.sh
export OUT
timeout 130 python3 bench/model_kernel_profile.py --model "resnet50 b32" --dtype bf16 --top 62 --out "$OUT/resnet50-kernels.json" 2>&1 \
  | grep -v -i warn > "$OUT/resnet50-kernels.txt"
grep -A64 "== ember per launch" "$OUT/resnet50-kernels.txt" | head -66; tail -3 "$OUT/resnet50-kernels.txt"
LEVELS=1 BUDGET=380 bash bench/gpu_session37c.sh
