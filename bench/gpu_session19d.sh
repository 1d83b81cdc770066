#!/usr/bin/env bash
# Nineteenth session: the decode step's cost of batch invariance (one program over a named batch
# size) against the per-batch programs, Llama-3.2-1B shapes, context 1024, batches 1 and 8.
set -u
. bench/gpu_env.sh
for inv in "" "--batch-invariant"; do
  timeout 280 python3 bench/llm.py --contexts 1024 --batches 1,8 --skip-torch-compile $inv --out "$OUT/llm${inv:+-invariant}.json" 2>&1 \
    | grep -v -i warn | grep "batch\|ember_graph\|argmax" | cut -c1-400 | tail -8
done
