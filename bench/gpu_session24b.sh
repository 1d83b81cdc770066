#!/usr/bin/env bash
# Twenty-fourth session, run b: tf32x3's accumulator folds (codegen/cuda_wgmma.py PROMOTE_SLICES) —
# error and time against no folds and the 256-wide tile, on KernelBench's long-k layer shapes and the
# f32 GEMMs; KernelBench's ShallowWideMLP and VanillaRNN (K = 32768, missed 1e-4 before); then the
# level-3 sample resumed from run e's JSON (RESUME_FROM).
set -u
. bench/gpu_env.sh
timeout 230 python3 bench/f32_contractions.py --promote --only "${ONLY:-kb rnn,long k,f32 4096^3 nt,dW 1376}" --out "$OUT/f32-promote.json" 2>&1 | grep -v -i warn
K=third_party/KernelBench
for p in level3/2_ level3/33_; do
  timeout 80 python3 bench/kernelbench.py $K/${p}*.py --seeds 2 --trials 30 --warmup 3 --ember-precision torch \
    --out "$OUT/kb-$(basename $p).json" 2>&1 | grep -v -i warn | tail -2
done
cp ${RESUME_FROM:-bench/results/gpu-session23-2026-11-26/e/real-kb.json} "$OUT/real-kb.json"
timeout ${RESUME_S:-200} python3 bench/kernelbench.py $K --sample 20 --sample-seed 0 --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --time-budget $(( ${RESUME_S:-200} - 30 )) --out "$OUT/real-kb.json" --resume 2>&1 | grep -v -i warn | grep -v "^  " | tail -30
