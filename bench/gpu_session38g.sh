#!/usr/bin/env bash
# (a record: `eprefetch` measured slower here and was removed the same session, its tests with it;
#  this script no longer reproduces; bench/results/gpu-session38-2026-11-28/g/, i/ hold what it measured)
# Thirty-eighth session: the register epilogue's prefetch of tile reads (knob `eprefetch`): its CUDA tests,
# the bottleneck-closing residual convs with it, ResNet-50 bf16 and BERT-base with EMBER_WGMMA_EPREFETCH 0 / 1.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_wgmma_prefetch.py -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/prefetch_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/prefetch_tests.log") FAILED"; grep -E '^FAILED|Error' "$OUT/prefetch_tests.log" | head -5; tail -1 "$OUT/prefetch_tests.log"
timeout 100 python3 bench/conv_sweep.py --only "+res" --out "$OUT/res-sweep.json" --knobs '[{"eprefetch": true}, {"eprefetch": true, "persistent": true}]' 2>&1 \
  | grep -v -i "warn\|cls.__new__"
for pf in 0 1; do
  EMBER_WGMMA_EPREFETCH=$pf timeout 100 python3 bench/gpu_models.py --only resnet50,bert --dtypes bf16 --rounds 3 --out "$OUT/models-$pf.json" 2>&1 \
    | grep -v -i "warn\|cls.__new__" | grep case | cut -c1-420
done
