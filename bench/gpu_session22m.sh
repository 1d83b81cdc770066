#!/usr/bin/env bash
# Twenty-second session, thirteenth run: the Llama-1B decode step after the stored-operand rule for
# streamed attention (a regression check against 1.34 ms at context 1024, gpu-session19 m/).
set -u
. bench/gpu_env.sh
timeout 230 python3 bench/llm.py --contexts 1024 --batches 1 --skip-torch-compile --out "$OUT/llm.json" 2>&1 | grep -v -i warn | grep "ember_graph\|prefill" | cut -c1-300
