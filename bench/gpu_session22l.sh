#!/usr/bin/env bash
# Twenty-second session, twelfth run (final build): the three real models in bf16 with eager, Ember
# and torch.compile timed in interleaved rounds (bench/gpu_models.py --rounds 3).
set -u
. bench/gpu_env.sh
timeout 400 python3 bench/gpu_models.py --dtypes bf16 --rounds 3 --out "$OUT/gpu-models-bf16-rounds.json" 2>&1 | grep -v -i warn | grep "{" | cut -c1-600
