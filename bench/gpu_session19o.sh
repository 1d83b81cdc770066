#!/usr/bin/env bash
# Nineteenth session: GEMMs of 2..8 rows (per-batch decode programs) as GEMVs shared by the rows,
# unsplit — A/B against split-K tensor-core tiles (EMBER_ROWS_GEMV=0), Llama-1B decode at batch 1 / 2 / 8;
# the CUDA LLM tests. (Separate program caches: the env toggle is not in the cache key.)
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest -m cuda tests/test_llm.py tests/test_batch_invariance.py tests/test_state.py \
  -p no:cacheprovider -p no:warnings -n 8 2>&1 | tee "$OUT/cuda_tests.log" | tail -2
for rg in 0 1; do
  EMBER_ROWS_GEMV=$rg EMBER_CACHE_DIR=/tmp/ember_cache_rg$rg timeout 170 python3 bench/llm.py --contexts 1024 --batches 1,2,8 \
    --skip-torch-compile --out "$OUT/llm-rowsgemv$rg.json" 2>&1 | grep -v -i warn | grep "ember_graph" | cut -c1-260
done
