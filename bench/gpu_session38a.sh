#!/usr/bin/env bash
# For the thirty-eighth session (prepared in the thirty-seventh): the im2col copy (knob `im2col`,
# codegen/cuda_wgmma_im2col.py). Measured once in the 37th (H200): KernelBench 14's TF32 conv 637 ->
# 268 us at the default tile (cuDNN 321). One CUDA test failed there on a bug since fixed (a second
# producer warpgroup dropped without the launch's block size following: such a config is refused
# now). First every CUDA test that runs im2col configs and compute-sanitizer over one, then the
# KB14 / KB32 and the seed conv with the knob; `bench/gpu_session38b.sh` the project's and the real convs
# and ResNet-50 off / on.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/test_wgmma_im2col.py tests/test_wgmma.py tests/test_cuda.py -k "im2col or conv" \
  -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
for tool in memcheck racecheck; do
  timeout 45 compute-sanitizer --tool $tool --print-limit 5 python3 -c "
import sys; sys.path.insert(0, 'tests')
import numpy as np, ember as em
from test_wgmma_im2col import _convs, _build, BF
y = _convs()['stride2']()
p = _build(y, {'mode': 'wgmma', 'BM': 128, 'BN': 64, 'stages': 4, 'im2col': True}, 'cuda')
x = np.random.default_rng(0).standard_normal((8, 40, 29, 31)).astype(np.float32).astype(BF.np)
out = np.asarray(p(x=x), np.float32); ref = np.asarray(em.reference([y], x=x)[0], np.float32)
print('rel err', np.abs(out - ref).max() / np.abs(ref).max())" > "$OUT/sanitize-$tool.log" 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|rel err|RACECHECK SUMMARY" "$OUT/sanitize-$tool.log"
done
timeout 130 python3 bench/f32_conv.py --cases 3,2 --tf32 --const-weights --configs 4 --knob im2col --out "$OUT/kb14-kb32-im2col.json" 2>&1 \
  | grep -v -i warn | tail -24
# the seed-000 conv at float32 accuracy (target 2x eager = 486 us; 720 us now): its 4-channel (padded)
# input is one 16-byte pixel, so im2col copies it per filter tap, unswizzled (the narrow copies)
timeout 90 python3 bench/f32_conv.py --cases 0 --configs 2 --knob im2col --out "$OUT/seed-im2col.json" 2>&1 | grep -v -i warn | tail -8
