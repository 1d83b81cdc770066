#!/usr/bin/env bash
# Twenty-second session, first run: the three real models in bf16 (eager, torch.compile, Ember) in one
# run, and where BERT's and the Llama prefill's time goes (profiles with the IR of the slowest kernels).
set -u
. bench/gpu_env.sh
timeout 420 python3 bench/gpu_models.py --dtypes bf16 --out "$OUT/gpu-models-bf16.json" 2>&1 | grep -v -i warn | tail -4
timeout 150 python3 bench/gpu_models.py --profile bert bf16 30 6 2>&1 | grep -v -i warn > "$OUT/bert-bf16-profile.txt"; head -32 "$OUT/bert-bf16-profile.txt" | grep " us " | cut -c1-220
timeout 200 python3 bench/gpu_models.py --profile llama bf16 30 6 2>&1 | grep -v -i warn > "$OUT/llama-bf16-profile.txt"; grep " us " "$OUT/llama-bf16-profile.txt" | cut -c1-220
