#!/usr/bin/env bash
# Twenty-first session: channels-last contraction layouts (kernel/layout.py) and the chunked wgmma
# gather — ResNet-50 bf16 with them (the default) and without, its kernel profile, and the CUDA suite.
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/gpu_models.py --only resnet --dtypes bf16,f32 --out "$OUT/gpu-models-resnet-cl.json" 2>&1 | grep -v -i warn | tail -6
EMBER_CONTRACTION_LAYOUTS=0 timeout 100 python3 bench/gpu_models.py --only resnet --dtypes bf16 --no-torch-compile --out "$OUT/gpu-models-resnet-nocl.json" 2>&1 | grep -v -i warn | tail -3
timeout 150 python3 bench/gpu_models.py --profile resnet50 bf16 70 0 2>&1 | grep -v -i warn > "$OUT/resnet50-bf16-cl-profile.txt"; head -40 "$OUT/resnet50-bf16-cl-profile.txt" | cut -c1-250
timeout 300 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -15
