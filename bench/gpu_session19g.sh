#!/usr/bin/env bash
# Nineteenth session: the batch-invariant decode program's projections as GEMVs shared by the rows, 8 rows a warp (`rows: 8`)
# (warp mode, each warp 8 rows against one weight row) — correctness, the decode step, the
# bf16 load test.
set -u
. bench/gpu_env.sh
timeout 200 python3 -m pytest -m cuda tests/test_batch_invariance.py tests/test_llm.py tests/test_serve.py tests/test_attention.py tests/test_state.py \
  -q -p no:cacheprovider -p no:warnings -n 8 2>&1 | tee "$OUT/cuda_tests.log" | grep -E "passed|failed|Error|FAILED" | tail -8
timeout 150 python3 bench/llm.py --contexts 1024 --batches 1,8,32 --skip-torch-compile --batch-invariant --out "$OUT/llm-invariant.json" 2>&1 \
  | grep -v -i warn | grep "ember_graph" | cut -c1-300
timeout 200 python3 bench/serve_load.py --shape 1b --device cuda --clients 1,8,32 --requests 32 --max-tokens 32 --max-batch 32 \
  --batch-invariant --out "$OUT/serve-load-bf16-invariant.json" 2>&1 | grep -v -i warn | tee "$OUT/serve-load-invariant.log" | tail -3
