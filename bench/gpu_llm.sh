#!/usr/bin/env bash
# Issue 21 on the device: the CUDA tests (ember.llm, state writes, the rest), then bench/llm.py.
# Usage on the device machine: bash bench/gpu_llm.sh [stage...]   (logs and JSON under $OUT)
set -u
EXTRA_VERSIONS=transformers . bench/gpu_env.sh
for stage in "${@:-llmtests bench}"; do
  case $stage in
    llmtests) timeout ${T_LT:-200} python3 -m pytest -m cuda tests/test_llm.py tests/test_state.py -q -p no:cacheprovider -p no:warnings -n 4 2>&1 | tee "$OUT/llm_tests.log" | tail -15 ;;
    cuda) timeout ${T_CUDA:-300} python3 -m pytest -m cuda tests/ -q -p no:cacheprovider -p no:warnings -n 14 2>&1 | tee "$OUT/cuda_tests.log" | tail -30 ;;
    bench) timeout ${T_BENCH:-420} python3 bench/llm.py --out "$OUT/llm.json" ${LLM_ARGS:-} 2>&1 | grep -v -i warn | tee "$OUT/llm.log" ;;
  esac
done
