#!/usr/bin/env bash
# Eighteenth session: the serving engine a step ahead of the host (issue 23), bf16 and f32, Llama-1B shapes.
set -u
. bench/gpu_env.sh
timeout 200 python3 -m pytest tests/test_serve.py tests/test_llm.py -m cuda -q -p no:cacheprovider -p no:warnings 2>&1 | tail -3
timeout 300 python3 bench/serve_load.py --shape 1b --device cuda --clients 1,8 --requests 16 --max-tokens 32 --max-batch 8 \
  --out "$OUT/serve-load.json" 2>&1 | grep -v -i warn | tee "$OUT/serve-load.log" | tail -8
timeout 240 python3 bench/serve_load.py --shape 1b --device cuda --dtype float32 --clients 1,8 --requests 16 --max-tokens 32 \
  --max-batch 8 --out "$OUT/serve-load-f32.json" 2>&1 | grep -v -i warn | tee "$OUT/serve-load-f32.log" | tail -6
