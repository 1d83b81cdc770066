#!/usr/bin/env bash
# For the thirty-eighth session: the elementwise mode's `unroll` knob (codegen/cuda_elementwise.py), built
# in the thirty-seventh, untimed: its CUDA tests, then the project's plain maps (0.91-0.97x eager on the
# H200, one 16-byte load in flight a thread) with EMBER_ELEMENTWISE_UNROLL 1 / 2 / 4 in one process each.
set -u
. bench/gpu_env.sh
export OUT
timeout 120 python3 -m pytest -m cuda tests/test_cuda_elementwise.py tests/test_cuda_thread_unroll.py -p no:cacheprovider -p no:warnings -n 8 -rf -q \
  > "$OUT/elementwise_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/elementwise_tests.log") FAILED"; tail -1 "$OUT/elementwise_tests.log"
show() { python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
for r in d['problems']: print(r['name'], r['status'], r.get('kernels'), r.get('ember_ms'), r.get('eager_ms'), r.get('speedup_vs_eager'))" "$1"; }
for u in 1 2 4; do
  EMBER_ELEMENTWISE_UNROLL=$u timeout 130 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch \
    --only 10_relu,11_gelu,12_sigmoid,14_leaky_relu,15_softplus,16_silu,17_elu,18_hardtanh --no-compile \
    --out "$OUT/kb-maps-$u.json" 2>&1 | grep -v -i warn | tail -1; show "$OUT/kb-maps-$u.json"
done
