#!/usr/bin/env bash
# For the forty-first session: the seed-000 conv's whole wgmma space under rewrite 0a (default 523 us on the
# H200 in the fortieth, 1.87x eager; 2x is ~490), float32 accuracy, weights an input.
set -u
. bench/gpu_env.sh
export OUT
timeout 500 python3 bench/f32_conv.py --cases 0 --configs 0 --out "$OUT/seed-space.json" 2>&1 | grep -v -i warn | tail -70
