#!/usr/bin/env bash
# Forty-fourth session: project 04_mobilenetv2_blocks (1.244 ms in the suite run, 0.735x eager; 1.03 in the forty-third's)
# and 03_resnet_basic_blocks (0.99x): each launch timed with its config, torch.compile's kernels beside; 04 with the
# RS form off (EMBER_WGMMA_RS=0) and on, twice each, to tell a regression from the swing.
set -u
. bench/gpu_env.sh
export OUT
for p in level3/04_mobilenetv2_blocks level3/03_resnet_basic_blocks; do
  timeout 150 python3 bench/problem_launches.py kernelbench/$p.py --top 22 --out "$OUT/$(basename $p).json" 2>&1 | grep -v -i warn | tail -50
done
for rs in 0 1 0 1; do
  EMBER_WGMMA_RS=$rs timeout 100 python3 bench/kernelbench.py kernelbench --device cuda --seeds 2 --ember-precision torch --level 3 \
    --only 04_ --out "$OUT/kb04-rs$rs.json" 2>&1 | grep -v -i warn | tail -1
  python3 -c "import json; p = json.load(open('$OUT/kb04-rs$rs.json'))['problems'][0]; print('RS=$rs', p['ember_ms'], p['eager_ms'], p['compile_ms'])"
done
