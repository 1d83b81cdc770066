#!/usr/bin/env bash
# Thirty-first session, run n: the CUDA tests that replay graphs with tensor maps (LLM, wgmma,
# graphs, TMA) after backends/cuda_graph.py re-records only launches whose maps depend on dims.
set -u
. bench/gpu_env.sh
export OUT
timeout 230 python3 -m pytest -m cuda tests/ -k "llm or wgmma or graph or tma or prefill or decode" -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
