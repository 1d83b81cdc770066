#!/usr/bin/env bash
# Twenty-seventh session, run a: the GQA backward in scores mode (never run on a GPU), the decode
# attention's K / V rows asked of L2 before its grid-dependency wait (knob kv_prefetch) as 16 layers
# and in a Llama-1B decode step at 1K / 8K context, and ResNet-101 at float32 precision with tf32x3's
# accumulator folds from any K (EMBER_PROMOTE_MIN_K=0).
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/test_attention_backward.py tests/test_attention.py -p no:cacheprovider -p no:warnings -n 8 -rf -q 2>&1 | tee "$OUT/cuda_tests_attention.log" | tail -3
timeout 200 python3 bench/attention.py --decode-layers 16 --prefetch-ab --out "$OUT/attention-decode-layers-prefetch.json" 2>&1 | grep -v -i warn | tail -14
for pf in 0 1; do
  EMBER_KV_PREFETCH=$pf timeout 200 python3 bench/llm.py --contexts 1024,8192 --batches 1 --skip-torch-compile --out "$OUT/llm-kvprefetch$pf.json" 2>&1 | grep -v -i warn | grep "ember_graph\|decode_ms\|compiled" | cut -c1-300
done
EMBER_PROMOTE_MIN_K=0 timeout 150 python3 bench/kernelbench.py third_party/KernelBench --level 3 --only 10_ResNet101 --seeds 2 --trials 10 --warmup 3 \
  --ember-precision float32 --out "$OUT/real-kb-l3-resnet101-float32-promote0.json" 2>&1 | grep -v -i warn | grep -v "^  " | tail -4
