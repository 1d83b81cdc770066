#!/usr/bin/env bash
# Thirty-sixth session, last run: the new defaults (36b's flags on; heavy epilogues persistent in
# tiles at most 128 wide) on the mish convs and the project problems they touch.
set -u
. bench/gpu_env.sh
export OUT
timeout 60 python3 bench/f32_conv.py --cases 3,2 --tf32 --const-weights --mish --configs 1 --out "$OUT/mish-default.json" 2>&1 | grep -v -i warn | head -8
show() { python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('compile_ms'), r.get('speedup_vs_eager'), r.get('speedup_vs_compile'))" "$1"; }
timeout 150 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
  --only 14_conv2d_mish,32_conv2d_3x3,04_matmul_irregular,01_mlp --out "$OUT/kb-defaults.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-defaults.json"
timeout 60 python3 -m pytest -m cuda tests/test_layout_gemm.py tests/test_wgmma.py -p no:cacheprovider -p no:warnings -n 8 -q -x 2>&1 | tail -2
