#!/usr/bin/env bash
# Seventeenth session's third device call: the serving load test at Llama-1B shapes (bf16) after the
# step inputs became persistent device buffers (issue 23: inter-token latency).
set -u
. bench/gpu_env.sh
timeout 420 python3 bench/serve_load.py --shape 1b --device cuda --clients 1,8 --requests 16 --max-tokens 32 --max-batch 8 \
  --out "$OUT/serve-load.json" 2>&1 | tee "$OUT/serve-load.log" | tail -14
