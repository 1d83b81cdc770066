#!/usr/bin/env bash
# Nineteenth session: decode attention timed as in a decode step (16 back-to-back layers in one graph
# replay) against SDPA the same way; the x @ W GEMV under split-K policies and cols knobs (issue 19).
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/attention.py --decode-layers 16 --out "$OUT/attention-decode-layers.json" 2>&1 | grep -v -i warn | tail -6
timeout 300 python3 bench/gemv_sweep.py --out "$OUT/gemv-sweep.json" 2>&1 | grep -v -i warn | tail -30
