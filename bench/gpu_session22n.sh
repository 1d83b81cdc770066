#!/usr/bin/env bash
# Twenty-second session, fourteenth run: after the retry fix — the decode step (150 kernels, 1.34 ms
# before this session), the attention / LLM CUDA tests, BERT and the Llama prefill in bf16.
set -u
. bench/gpu_env.sh
timeout 120 python3 -m pytest -m cuda tests/test_attention_models.py tests/test_attention.py tests/test_llm.py -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -3
timeout 150 python3 bench/llm.py --contexts 1024 --batches 1 --skip-torch-compile --out "$OUT/llm.json" 2>&1 | grep -v -i warn | grep "ember_graph\|decode_ms\|compiled" | cut -c1-300
timeout 200 python3 bench/gpu_models.py --only bert,llama --dtypes bf16 --no-torch-compile --rounds 2 --out "$OUT/gpu-models-bf16.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-300
