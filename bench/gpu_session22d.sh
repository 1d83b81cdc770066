#!/usr/bin/env bash
# Twenty-second session, fourth run: after the LM head's row-tile order and the stem conv padded to
# 8 channels — the three real models in bf16, ResNet-50's profile without PDL, the touched CUDA tests.
set -u
. bench/gpu_env.sh
timeout 400 python3 bench/gpu_models.py --dtypes bf16 --out "$OUT/gpu-models-bf16.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-420
EMBER_PDL=0 timeout 120 python3 bench/gpu_models.py --profile resnet bf16 24 3 2>&1 | grep -v -i warn > "$OUT/resnet-bf16-profile-nopdl.txt"; grep " us " "$OUT/resnet-bf16-profile-nopdl.txt" | cut -c1-160
timeout 200 python3 -m pytest -m cuda tests/test_contraction_layouts.py tests/test_wgmma.py tests/test_cuda.py tests/test_llm.py -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -4
