#!/usr/bin/env bash
# Issue 20 on the device: the attention CUDA tests and bench/attention.py, then the LLM with streamed
# kernels computing q's rotary themselves (EMBER_STREAM_PROLOGUES=1) against the default.
# Usage on the device machine: bash bench/gpu_attention.sh [stage...]   (logs and JSON under $OUT)
set -u
EXTRA_VERSIONS=transformers . bench/gpu_env.sh
for stage in "${@:-tests prologues bench}"; do
  case $stage in
    tests) timeout 200 python3 -m pytest -m cuda tests/test_attention.py tests/test_llm.py -q -p no:cacheprovider -p no:warnings -n 8 2>&1 | tail -3 | tee "$OUT/attention_tests.log" ;;
    prologues) EMBER_STREAM_PROLOGUES=1 timeout 200 python3 -m pytest -m cuda tests/test_attention.py tests/test_llm.py -q -p no:cacheprovider -p no:warnings -n 8 2>&1 | tail -3 | tee "$OUT/attention_tests_prologues.log"
               EMBER_STREAM_PROLOGUES=1 timeout 300 python3 bench/llm.py --out "$OUT/llm-prologues.json" --contexts 1024 --batches 1 --skip-torch-compile 2>&1 | grep -v -i warn | tail -6 ;;
    bench) timeout 400 python3 bench/attention.py --exact-compare --out "$OUT/attention.json" 2>&1 | grep -v -i warn | tail -20 ;;
  esac
done
