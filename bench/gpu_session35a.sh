#!/usr/bin/env bash
# The thirty-fifth session's second device run: cumprod's output kernel as a two-term scan (the real
# KernelBench's 90_cumprod ran its two masked sums as plain loops in warp mode: 329 ms, eager 4.7),
# and the seed-000 conv with its padded input-weight copy stored channels-last (the float32 default
# now takes wgmma; it took mma over the relaid input at 2.39 ms, eager 0.97).
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_scan.py tests/test_contraction_layouts.py -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
timeout 150 python3 bench/kernelbench.py third_party/KernelBench --device cuda --seeds 3 --ember-precision torch --only cumprod,masked_cumsum \
    --out "$OUT/kb-90.json" 2>&1 | grep -v -i warn | tail -1
python3 -c "
import json; d = json.load(open('$OUT/kb-90.json'))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('speedup_vs_compile'), r.get('max_abs_err'))"
timeout 200 python3 bench/f32_conv.py --out "$OUT/f32-conv.json" 2>&1 | grep -v -i warn | head -40
