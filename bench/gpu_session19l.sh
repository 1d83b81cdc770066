#!/usr/bin/env bash
# Nineteenth session: the decode attention schedule's knobs timed as 16 layers in one graph replay.
set -u
. bench/gpu_env.sh
timeout 400 python3 bench/attention.py --decode-layers 16 --variants --out "$OUT/attention-decode-layers-variants.json" 2>&1 | grep -v -i warn | tail -6
