#!/usr/bin/env bash
# For the thirty-sixth session, after gpu_session36a.sh and 36b.sh (prepared in the thirty-fifth; not run): the
# float32 / TF32 conv schedules over the whole wgmma space.
set -u
. bench/gpu_env.sh
export OUT
# KernelBench 14 (3x3 conv 64 -> 64 over 32 x 128^2, then mish twice): 1.375 ms against 32's 0.888 for
# twice the products (64 -> 128) — which part is slow: the conv's schedule (every wgmma config,
# the gather knobs `producers` / `gunroll` included), or the mish epilogue (with and without)
timeout 200 python3 bench/f32_conv.py --cases 3 --tf32 --const-weights --configs 0 --out "$OUT/kb14-conv.json" 2>&1 | grep -v -i warn | head -40
timeout 150 python3 bench/f32_conv.py --cases 3,2 --tf32 --const-weights --mish --configs 6 --out "$OUT/kb14-mish.json" 2>&1 | grep -v -i warn | head -20
# the seed-000 conv (issue 19: 2x eager at float32 accuracy; 1.36x, 721 us): the whole wgmma space,
# the gather knobs too (`--configs 14` stopped before them)
timeout 200 python3 bench/f32_conv.py --cases 0 --configs 0 --out "$OUT/seed-conv.json" 2>&1 | grep -v -i warn | head -40
# the channels-last input copies (64 channels: NCHW -> NHWC) in the transpose mode (EMBER_TRANSPOSE_COPIES=1)
show() { python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('speedup_vs_eager'))" "$1"; }
for flag in 0 1; do
  EMBER_TRANSPOSE_COPIES=$flag timeout 100 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 32_conv2d_3x3,14_conv2d_mish_mish --out "$OUT/kb-transpose-$flag.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-transpose-$flag.json"
done
