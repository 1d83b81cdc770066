#!/usr/bin/env bash
# Twenty-first session, second run: layouts propagated to the sources of relaid nodes (stem, pool,
# split partials) — ResNet-50 bf16 against eager and torch.compile, its profile, the conv CUDA tests.
set -u
. bench/gpu_env.sh
timeout 200 python3 bench/gpu_models.py --only resnet --dtypes bf16 --out "$OUT/gpu-models-resnet-cl2.json" 2>&1 | grep -v -i warn | tail -3
timeout 150 python3 bench/gpu_models.py --profile resnet50 bf16 70 0 2>&1 | grep -v -i warn > "$OUT/resnet50-bf16-cl2-profile.txt"; head -14 "$OUT/resnet50-bf16-cl2-profile.txt" | cut -c1-200
timeout 200 python3 bench/gpu_models.py --only resnet --dtypes bf16 --out "$OUT/gpu-models-resnet-cl2-repeat.json" 2>&1 | grep -v -i warn | tail -3
timeout 300 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -4
