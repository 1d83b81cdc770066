#!/usr/bin/env bash
# Fortieth session, after 40a-e: the new defaults (rewrite 0a EMBER_CONV_PHASES on, cols `own` on, windows of
# 17-32 taps unrolled) confirmed: their CUDA tests (the `unsigned int{}` zero of a 4-byte guarded load fixed),
# the project problems they change, ResNet-50 (bf16, f32) and BERT-base, the seed-000 conv.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_cols_own.py tests/test_cuda_thread_unroll.py tests/test_conv_phases.py \
  -p no:cacheprovider -p no:warnings -n 4 -rf -q > "$OUT/tests.log" 2>&1
echo "cuda tests rc=$? $(grep -a -c '^FAILED' "$OUT/tests.log") FAILED"; grep -a '^FAILED' "$OUT/tests.log" | head -5; tail -1 "$OUT/tests.log"
timeout 90 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch --no-compile \
  --only 01_mlp,08_vgg_small,09_llama_block,41_maxpool2d,42_avgpool3d,19_conv3d_softmax --out "$OUT/kb.json" 2>&1 | grep -v -i warn | tail -1
python3 -c "
import json; d = json.load(open('$OUT/kb.json'))
for p in d['problems']: print(p['name'], p.get('status'), round(p.get('ember_ms') or 0, 3), 'eager', round(p.get('eager_ms') or 0, 3), round(p.get('speedup_vs_eager') or 0, 2))"
timeout 40 python3 bench/f32_conv.py --cases 0 --configs 1 --out "$OUT/seed.json" 2>&1 | grep -v -i warn | tail -2
timeout 130 python3 bench/gpu_models.py --only resnet50 --dtypes bf16,f32 --rounds 3 --out "$OUT/resnet.json" 2>&1 | python3 bench/model_rows.py new-defaults
timeout 80 python3 bench/gpu_models.py --only bert-base --dtypes bf16 --rounds 3 --out "$OUT/bert.json" 2>&1 | python3 bench/model_rows.py new-defaults
