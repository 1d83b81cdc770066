#!/usr/bin/env bash
# Forty-ninth session: the cluster default over a symbolic row count, and the LLM runtime's CUDA tests on the new defaults.
set -u
. bench/gpu_env.sh
export OUT
timeout 400 python3 -m pytest -m cuda tests/test_wgmma_kcluster.py tests/test_llm.py -p no:cacheprovider -p no:warnings -n 8 -rf -q \
  > "$OUT/tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head -8; grep -E "[0-9]+ passed" "$OUT/tests.log" | tail -2
