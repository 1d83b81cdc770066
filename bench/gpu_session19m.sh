#!/usr/bin/env bash
# Nineteenth session: the decode attention default at batch 1 now 4 warps x 4 stages — the 16-layer
# protocol, the Llama-1B decode step, the CUDA attention / LLM / batch-invariance tests.
set -u
. bench/gpu_env.sh
timeout 120 python3 bench/attention.py --decode-layers 16 --out "$OUT/attention-decode-layers.json" 2>&1 | grep -v -i warn | grep -o '"B".*"ember_pct_copy_bw": [0-9.]*' | cut -c1-200
timeout 200 python3 -m pytest -m cuda tests/test_attention.py tests/test_llm.py tests/test_batch_invariance.py tests/test_state.py tests/test_megakernel.py \
  -q -p no:cacheprovider -p no:warnings -n 8 2>&1 | tee "$OUT/cuda_tests.log" | tail -2
timeout 200 python3 bench/llm.py --contexts 1024 --batches 1 --skip-torch-compile --out "$OUT/llm.json" 2>&1 | grep -v -i warn | grep "ember_graph" | cut -c1-300
