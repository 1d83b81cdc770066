#!/usr/bin/env bash
# For the forty-fifth session: the project suite's levels 2 and 3 on this build (strips on by default, reused
# outputs, ctypes graph launches), and level 1's windowed problems the strips change (the rest of level 1 ran
# in d/ on the build before the strips).
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 bench/kernelbench.py kernelbench --device cuda --seeds 5 --ember-precision torch --level 1 \
  --only 34_,41_,42_ --out "$OUT/kb-level1-windows.json" 2>&1 | grep -v -i warn | tail -6
LEVELS="2 3" BUDGET=${BUDGET:-170} bash bench/gpu_session37c.sh
