#!/usr/bin/env bash
# The megakernel's CUDA tests once more after the tolerance fix (seventeenth session).
set -u
. bench/gpu_env.sh
timeout 150 python3 -m pytest tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -rA 2>&1 | tee "$OUT/tests.log" | grep -E "passed|failed|PASSED|FAILED|Error" | tail -12
