#!/usr/bin/env bash
# Nineteenth session: programmatic edges kept on nodes whose grid follows a named batch (which cannot
# be emptied) — the invariant decode step, the CUDA tests of graphs and dims, the bf16 load test.
set -u
. bench/gpu_env.sh
timeout 200 python3 -m pytest -m cuda tests/test_state.py tests/test_llm.py tests/test_batch_invariance.py tests/test_pdl_dims.py tests/test_serve.py \
  -q -p no:cacheprovider -p no:warnings -n 8 2>&1 | tee "$OUT/cuda_tests.log" | tail -2
timeout 150 python3 bench/llm.py --contexts 1024 --batches 1,2,8 --skip-torch-compile --batch-invariant --out "$OUT/llm-invariant.json" 2>&1 \
  | grep -v -i warn | grep "ember_graph" | cut -c1-300
timeout 200 python3 bench/serve_load.py --shape 1b --device cuda --clients 1,8 --requests 32 --max-tokens 32 --max-batch 8 \
  --batch-invariant --out "$OUT/serve-load-bf16-invariant-b8.json" 2>&1 | grep -v -i warn | tail -2
