#!/usr/bin/env bash
# Twenty-second session, ninth run (final build): the three real models in bf16 and ResNet-50 / BERT
# in float32, each against eager and torch.compile in one process.
set -u
. bench/gpu_env.sh
timeout 330 python3 bench/gpu_models.py --dtypes bf16 --out "$OUT/gpu-models-bf16.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-420
timeout 240 python3 bench/gpu_models.py --only resnet,bert --dtypes f32 --out "$OUT/gpu-models-f32.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-420
