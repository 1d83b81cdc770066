#!/usr/bin/env bash
# Eighteenth session: float32-accuracy convs (the seed-000 conv) in the wgmma tf32x3 gather forms.
set -u
. bench/gpu_env.sh
timeout 300 python3 bench/f32_conv.py --out "$OUT/f32-conv.json" 2>&1 | grep -v -i warn | tail -40
