#!/usr/bin/env bash
# Twenty-sixth session, run c: the flash kernel issues X's loads along the keys (a data mask) before
# its score MMAs (knob prefetch_x): the attention CUDA tests, SDPA with a padding mask with the knob on
# and off (--variants), and BERT-base bf16 (Hugging Face's eager attention reads its padding mask per
# score) against torch.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_attention.py tests/test_attention_models.py tests/test_llm.py -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests_attention.log" | tail -3
timeout 200 python3 bench/attention.py --masked-only --variants --out "$OUT/attention-masked-variants.json" 2>&1 | grep -v -i warn | tail -4
timeout 200 python3 bench/gpu_models.py --only bert --dtypes bf16 --out "$OUT/gpu-models-bert.json" 2>&1 | grep -v -i warn | tail -6
