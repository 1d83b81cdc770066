#!/usr/bin/env bash
# Twenty-eighth session, run k: the LLM bench (Llama-3.2-1B shapes, random bf16 weights) on this
# build — decode steps, generation and prefill against torch eager / CUDA graph / torch.compile —
# with the decode step's residual stream materialised (rule 7b at a row's size).
set -u
. bench/gpu_env.sh
export OUT
timeout 560 python3 bench/llm.py --out "$OUT/llm.json" --contexts 128,1024 --batches 1,8 2>&1 | grep -v -i warn | tail -12
