#!/usr/bin/env bash
# Thirty-first session, run c: decode attention at 8K keys, batch 1, head dim 128 (issue 20's
# >= 85% of copy bandwidth; 66% today with 64 blocks of 4 warps: one warp a scheduler on half the
# SMs) — the knob grid widened to 2 and 8 warps a block and more clusters, under the 16-layer
# protocol (bench/attention.py --decode-layers 16 --variants).
set -u
. bench/gpu_env.sh
export OUT
timeout 560 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,8192,128" \
  --decode-grid '{"warps": [2, 4, 8], "BN": [16, 32], "stages": [2, 4], "cluster_splits": [[8, 1], [8, 2], [4, 4], [8, 4], [4, 8]]}' \
  --out "$OUT/attention-decode-grid.json" 2>&1 | grep -v -i warn | tail -3
python3 - "$OUT/attention-decode-grid.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["decode_layers"][0]
v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
print("default", r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"])
for k, x in v[:12]: print(k, x)
print("errors", sum(1 for x in r.values() if isinstance(x, dict) and "error" in x))
PY
