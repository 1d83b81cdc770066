#!/usr/bin/env bash
# For the forty-seventh session: the forty-sixth's untimed builds, in three calls (PART=1, 2, 3: each under 600 s).
# 1: the depthwise convs' strips with a remainder (EMBER_STRIP_PREFER_DIVISIBLE=0: real KernelBench 82 / 84 / 85's
#    rows — 510 / 254 / 250 of them, 4 not dividing — instead of the batch, which shares only the weights; the batch
#    strip measured 816 us on 82 where the rows' V = 2 took 1268, gpu-session45 e/), A/B in one run; knob `walk` on 86.
# 2: the scans' grid capped (knob `gridcap` on scan mode: real KB cumsum's last kernel runs 524,288 blocks of 256
#    threads; the pools' short-lived blocks left the SMs a third occupied, gpu-session46 e/), and 4 positions a lane
#    (knob `pvec`: 16-byte loads and stores, the block's prefix once a lane); its CUDA tests first.
# 3: a padded window's interior unguarded (knob `interior`, kernel/interior.py): its CUDA tests, then the real pools
#    and the project's padded windows as overlays.
# Then the project suite in one build: `LEVELS=1 BUDGET=380 bash bench/gpu_session37c.sh`, `LEVELS="2 3" BUDGET=170 ...`.
set -u
. bench/gpu_env.sh
export OUT
K=third_party/KernelBench/level1
case "${PART:-1}" in
1)
  for d in 1 0; do
    EMBER_STRIP_PREFER_DIVISIBLE=$d timeout 250 python3 bench/kernelbench.py third_party/KernelBench --seeds 2 --level 1 \
      --ember-precision torch --no-compile --only 82_conv_depthwise,84_conv_depthwise,85_conv_depthwise \
      --out "$OUT/depthwise-$d.json" 2>&1 | grep -v -i warn | tail -3 | head -1
    python3 -c "
import json
for p in json.load(open('$OUT/depthwise-$d.json'))['problems']: print('$d', p['name'][:30], p.get('correct'), round(p.get('ember_ms') or 0, 3), round(p.get('speedup_vs_eager') or 0, 2))"
  done
  # knob `walk`: real KB 86's depthwise stores channels-last from NCHW with its lanes along the channels
  python3 -m pytest -q -p no:warnings -o addopts="" tests/test_cuda_strip.py -k walk 2>&1 | tail -2
  timeout 200 python3 bench/knob_sweep.py $K/86_conv_depthwise_separable_2D.py --precision torch \
    --knobs '[{"_on": "thread", "walk": "loads"}, {"_on": "thread", "walk": "loads", "interior": true}]' \
    --out "$OUT/walk.json" 2>&1 | grep -v -i warn | grep -v "^  " ;;
2)
  python3 -m pytest -q -p no:warnings -o addopts="" tests/test_scan.py -k "capped or pvec" 2>&1 | tail -2
  timeout 450 python3 bench/knob_sweep.py $K/89_cumsum.py $K/90_cumprod.py $K/93_masked_cumsum.py --precision torch \
    --knobs '[{"_on": "scan", "gridcap": 8}, {"_on": "scan", "gridcap": 32}, {"_on": "scan", "pvec": 4}, {"_on": "scan", "pvec": 4, "unroll": 4}]' \
    --out "$OUT/scans.json" 2>&1 | grep -v -i warn | grep -v "^  " ;;
3)
  python3 -m pytest -q -p no:warnings -o addopts="" tests/test_interior.py 2>&1 | tail -2
  timeout 450 python3 bench/knob_sweep.py $K/41_Max_Pooling_1D.py $K/42_Max_Pooling_2D.py $K/43_Max_Pooling_3D.py \
    $K/44_Average_Pooling_1D.py $K/86_conv_depthwise_separable_2D.py kernelbench/level1/34_conv2d_depthwise.py \
    kernelbench/level1/41_maxpool2d.py kernelbench/level1/42_avgpool3d.py --precision torch \
    --knobs '[{"_on": "thread", "interior": true}]' --out "$OUT/interior.json" 2>&1 | grep -v -i warn | grep -v "^  " ;;
esac
