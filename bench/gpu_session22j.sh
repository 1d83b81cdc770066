#!/usr/bin/env bash
# Twenty-second session, tenth run: HF eager attention as one flash kernel (BERT, the Llama prefill)
# — the whole CUDA suite, then the three real models in bf16 against eager and torch.compile.
set -u
. bench/gpu_env.sh
timeout 240 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -6
timeout 330 python3 bench/gpu_models.py --dtypes bf16 --out "$OUT/gpu-models-bf16.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-420
