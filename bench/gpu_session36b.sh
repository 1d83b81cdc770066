#!/usr/bin/env bash
# For the thirty-sixth session, after gpu_session36a.sh (prepared in the thirty-fifth; not run): the
# flag-guarded defaults A/B — GEMM operands TMA cannot take, copied (EMBER_COPY_GEMM_OPERANDS), and
# convs with 32 output channels in wgmma (EMBER_WGMMA_MIN_M=32; the real KernelBench's 71 and 78, `mma`),
# split GEMMs' prologues staged (EMBER_STAGE_SPLIT_PROLOGUES=1).
set -u
. bench/gpu_env.sh
export OUT
show() { python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('speedup_vs_compile'), r.get('max_abs_err'))" "$1"; }
# GEMM operands TMA cannot take (kernel/layout_gemm.py, EMBER_COPY_GEMM_OPERANDS=1): ragged rows
# (04: 1031 x 3079 x 2053, 0.70x eager; real 8: 8205 x 2949 x 5921) and float32 [K, N] operands in
# TF32, read from padded K-major copies (aligned float32 matmuls in torch's precision, tf32x3 through
# the staging ring, are left alone: tests/test_layout_gemm.py)
for flag in 0 1; do
  EMBER_COPY_GEMM_OPERANDS=$flag timeout 80 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only matmul_irregular --out "$OUT/kb-gemm-$flag.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-gemm-$flag.json"
  EMBER_COPY_GEMM_OPERANDS=$flag timeout 100 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 1 --ember-precision torch \
    --only 8_Matmul_with_irregular --out "$OUT/real-gemm-$flag.json" 2>&1 | grep -v -i warn | tail -1
  show "$OUT/real-gemm-$flag.json"
done
for m in 64 32; do
  EMBER_WGMMA_MIN_M=$m timeout 120 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 1 --ember-precision torch \
    --only 71_conv_transposed_2D__asym,78_conv_transposed_2D_asym --out "$OUT/real-minm-$m.json" 2>&1 | grep -v -i warn | tail -1
  show "$OUT/real-minm-$m.json"
done
# a GEMM split over k with a computed operand (project level 3 01_mlp's last layer, 1024 x 1000 over
# 4096: its ReLU'd input gathered a float at a time, `mma`) staged as a buffer for TMA
for flag in 0 1; do
  EMBER_STAGE_SPLIT_PROLOGUES=$flag timeout 70 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 01_mlp --out "$OUT/kb-mlp-$flag.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-mlp-$flag.json"
done
