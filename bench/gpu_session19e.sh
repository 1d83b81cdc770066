#!/usr/bin/env bash
# Nineteenth session: the bf16 load test at 1, 8 and 32 clients with and without batch invariance
# (max batch 32), torch eager one request at a time, and the invariant decode step's loop time
# (a new position updates no graph node unless a grid changes).
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/serve_load.py --shape 1b --device cuda --clients 1,8,32 --requests 32 --max-tokens 32 --max-batch 32 \
  --batch-invariant --torch-baseline 8 --out "$OUT/serve-load-bf16-invariant.json" 2>&1 | grep -v -i warn | tee "$OUT/serve-load-invariant.log" | tail -5
timeout 200 python3 bench/serve_load.py --shape 1b --device cuda --clients 1,8,32 --requests 32 --max-tokens 32 --max-batch 32 \
  --out "$OUT/serve-load-bf16.json" 2>&1 | grep -v -i warn | tee "$OUT/serve-load.log" | tail -4
timeout 150 python3 bench/llm.py --contexts 1024 --batches 1,8 --skip-torch-compile --batch-invariant --out "$OUT/llm-invariant.json" 2>&1 \
  | grep -v -i warn | grep "ember_graph" | cut -c1-300
