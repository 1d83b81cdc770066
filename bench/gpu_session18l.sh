#!/usr/bin/env bash
# Eighteenth session: TMA k over two runs; the CUDA suite, the training step, the contraction quick set.
set -u
. bench/gpu_env.sh
timeout 240 python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 2>&1 | tee "$OUT/cuda_tests.log" | grep -E "FAILED|Error" | head -20; grep -c F "$OUT/cuda_tests.log"; grep -o "\[[ 0-9]*%\]" "$OUT/cuda_tests.log" | tail -1
timeout 200 python3 bench/train.py --device cuda --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tee "$OUT/train.log" | tail -4
timeout 150 python3 bench/train_profile.py --device cuda --case gpt6x512 --out "$OUT/train-profile.json" 2>&1 | grep -v -i warn | head -10
timeout 150 python3 bench/contractions.py --quick --device-time --out "$OUT/contractions-quick.json" 2>&1 | grep -v -i warn | tail -6
