#!/usr/bin/env bash
# For the thirty-sixth session (prepared in the thirty-fifth; not run): the thirty-fifth session's
# last CPU-side changes on the GPU — cumprod with log2|x| recomputed inside its masked sums (rule 4's
# scan exception; 12.6 ms with it stored), the real KernelBench's other scans beside it, and
# KernelBench's pointwise conv (TF32 over the caller's NCHW input: 0.46x eager) with its input
# copied channels-last (EMBER_COPY_MN_INPUTS=1, both wgmma operands TMA copies) against without.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/test_scan.py tests/test_contraction_layouts.py tests/test_lowering.py tests/test_cuda_transpose.py tests/test_layout_gemm.py -p no:cacheprovider \
  -p no:warnings -n 8 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
show() { python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('speedup_vs_compile'), r.get('max_abs_err'))" "$1"; }
timeout 200 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 2 --ember-precision torch --only cumprod,masked_cumsum \
    --out "$OUT/kb-scans.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-scans.json"
for flag in 0 1 2; do  # 2: the copy in the transpose mode too (EMBER_TRANSPOSE_COPIES)
  export EMBER_TRANSPOSE_COPIES=$([ $flag = 2 ] && echo 1 || echo 0); [ $flag = 2 ] && flag=1x
  EMBER_COPY_MN_INPUTS=${flag%x} timeout 120 python3 bench/kernelbench.py kernelbench --device cuda --seeds 3 --ember-precision torch \
    --only conv2d_pointwise --out "$OUT/kb-pointwise-$flag.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-pointwise-$flag.json"
  EMBER_COPY_MN_INPUTS=${flag%x} timeout 90 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 1 --ember-precision torch \
    --only 87_conv_pointwise_2D --out "$OUT/real-pointwise-$flag.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/real-pointwise-$flag.json"
done
unset EMBER_TRANSPOSE_COPIES
