#!/usr/bin/env bash
# For the thirty-seventh session (prepared in the thirty-sixth; not run): the gather knobs `hoist`
# (rows split once a tile: codegen/cuda_wgmma_gather.py) and `cpasync` (cp.async copies arriving on
# the slot's barrier) — first correct (tests/test_wgmma.py runs every config, these included, against
# the reference; compute-sanitizer over one conv of each), then KernelBench 14's conv over the whole
# space (they are in it), then the project's convs with each flag.
set -u
. bench/gpu_env.sh
export OUT
timeout 240 python3 -m pytest -m cuda tests/test_wgmma.py tests/test_layout_gemm.py tests/test_attention.py -p no:cacheprovider \
  -p no:warnings -n 8 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
for tool in memcheck racecheck; do
  EMBER_WGMMA_HOIST=1 EMBER_WGMMA_CPASYNC=1 timeout 60 compute-sanitizer --tool $tool --print-limit 5 python3 -c "
import sys; sys.path.insert(0, 'tests')
import numpy as np, ember as em
from test_wgmma import _conv_chunk_gather
y = _conv_chunk_gather(); x = np.random.default_rng(0).standard_normal((8, 40, 27, 29)).astype(np.float32).astype(em.bfloat16.np)
p = em.compile(y, device='cuda'); out = np.asarray(p(x=x), np.float32); ref = np.asarray(em.reference([y], x=x)[0], np.float32)
print('rel err', np.abs(out - ref).max() / np.abs(ref).max())" > "$OUT/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|rel err|RACECHECK SUMMARY" "$OUT/sanitize-$tool.log"
done
timeout 150 python3 bench/f32_conv.py --cases 3 --tf32 --const-weights --configs 0 --out "$OUT/kb14-conv-space.json" 2>&1 | grep -v -i warn | grep -E "default|hoist|cpasync|eager" | head -20
# the seed-000 conv at float32 accuracy (tf32x3: `hoist` only; 722 us, 1.35x eager, target 2x): a chunk
# is one filter tap of its 4 channels, so its rows' divisions (55 x 55 outputs) are most of a chunk's work
timeout 150 python3 bench/f32_conv.py --cases 0 --configs 0 --out "$OUT/seed-conv-space.json" 2>&1 | grep -v -i warn | grep -E "default|hoist|eager" | head -8
show() { python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('speedup_vs_eager'))" "$1"; }
for hc in 00 10 11; do
  EMBER_WGMMA_HOIST=${hc:0:1} EMBER_WGMMA_CPASYNC=${hc:1:1} timeout 150 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 \
    --ember-precision torch --only 32_conv2d_3x3,14_conv2d_mish,33_conv2d_alexnet,36_conv2d_dilated,10_conv2d_relu,11_conv2d_batchnorm,13_conv2d_hardswish \
    --no-compile --out "$OUT/kb-convs-$hc.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-convs-$hc.json"
done
