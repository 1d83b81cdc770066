#!/usr/bin/env bash
# The im2col copy (codegen/cuda_wgmma_im2col.py) on the GPU: its CUDA tests (the walk against the
# gather, bit for bit, and the reference), then KernelBench 14's TF32 conv with the knob on and off.
set -u
. bench/gpu_env.sh
export OUT
timeout ${TEST_S:-100} python3 -m pytest -m cuda tests/test_wgmma_im2col.py tests/test_wgmma.py -k "im2col or conv" -p no:cacheprovider \
  -p no:warnings -n 8 -rf -q -x > "$OUT/im2col_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/im2col_tests.log") FAILED"; grep -E '^FAILED|^E ' "$OUT/im2col_tests.log" | head -8; tail -1 "$OUT/im2col_tests.log"
timeout ${BENCH_S:-90} python3 bench/f32_conv.py --cases ${CASES:-3} --tf32 --const-weights --configs ${CONFIGS:-3} --knob im2col \
  --out "$OUT/kb14-im2col.json" 2>&1 | grep -v -i warn | tail -12
