#!/usr/bin/env bash
# Twenty-seventh session, run e (the build with every merge on by default): the whole CUDA suite, the
# attention backward against torch (flash and cuDNN backends), the GPT training step, and decode
# attention's timeline inside a 16-layer replay (CUPTI: kernel durations, gaps, overlap).
set -u
. bench/gpu_env.sh
export OUT
timeout 230 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -4
timeout 150 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | grep shape | cut -c1-400
timeout 200 python3 bench/train.py --device cuda --only gpt6x512 --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tail -3
timeout 120 python3 bench/decode_layers_timeline.py --out "$OUT/decode-layers-timeline.json" 2>&1 | grep -v -i warn | tail -3
