#!/usr/bin/env bash
# Twentieth session: ResNet-50's convolutions (bf16, b32) one at a time — the default schedule against
# more blocks (64x64 tiles), register staging, and split-K for convs of a few tiles per SM; the whole
# model under the split overlays.
set -u
. bench/gpu_env.sh
timeout 560 python3 bench/conv_sweep.py --model --out "$OUT/conv-sweep.json" --knobs '[{"BM": 64, "BN": 64}, {"stages": 2},
  {"_split": {"tiles_few": 800}}, {"_split": {"tiles_few": 800, "tiles_wanted": 800}}, {"_split": {"tiles_few": 800, "tiles_wanted": 1600}}]' \
  2>&1 | grep -v -i warn
