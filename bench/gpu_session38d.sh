#!/usr/bin/env bash
# Thirty-eighth session, im2col on by default: ResNet-50 bf16's kernels against torch.compile's (where the
# 0.82x lies), then the project suite's levels 2 and 3 (level 1: `LEVELS=1 BUDGET=400 bash bench/gpu_session37c.sh`).
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 bench/model_kernel_profile.py --model "resnet50 b32" --dtype bf16 --top 40 --out "$OUT/resnet50-kernels.json" 2>&1 \
  | grep -v -i warn | tail -90 > "$OUT/resnet50-kernels.txt"
head -48 "$OUT/resnet50-kernels.txt"; grep -A12 "== torch_compile" "$OUT/resnet50-kernels.txt"
LEVELS="2 3" BUDGET=170 bash bench/gpu_session37c.sh
