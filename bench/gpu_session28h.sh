#!/usr/bin/env bash
# Twenty-eighth session, run h: the whole CUDA suite on this build (the residual stream materialised
# at a row's size changes every decode program), then the decode step's kernel timeline (CUPTI) and
# the LLM bench's decode / generation at contexts 128 and 1024.
set -u
. bench/gpu_env.sh
export OUT
timeout 300 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -4
timeout 120 python3 bench/decode_timeline.py --out "$OUT/decode-timeline.json" 2>&1 | grep -v -i warn | tail -3
