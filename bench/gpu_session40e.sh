#!/usr/bin/env bash
# For the fortieth session: issue 19's search target (>= 1.2x geomean over the default on the contraction
# suite; 1.03x on 2026-11-25, when its space had no ping-pong, no two-block staged epilogue, no swide off,
# no im2col): bench/contraction_search.py as then, same time limit, the space as it is now.
set -u
. bench/gpu_env.sh
export OUT
timeout 560 python3 bench/contraction_search.py --time-limit 18 --out "$OUT/contraction-search.json" 2>&1 | grep -v -i warn | tail -14
