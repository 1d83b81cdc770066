#!/usr/bin/env bash
# Thirty-second session, run l: batch 1 x 8K, head dim 128 — 16- and 32-key tiles x rings of 3 / 4
# x `pipe` x `affine` (the copies' lane offsets kept), twice (run-to-run noise).
set -u
. bench/gpu_env.sh
export OUT
for rep in 1 2; do
timeout 140 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,8192,128" \
  --decode-grid '{"warps": [4], "BN": [16, 32], "stages": [3, 4], "cluster_splits": [[8, 1]], "kt": [1], "affine": [0, 1], "gather": [1], "pipe": [0, 1]}' \
  --out "$OUT/attention-decode-b1-$rep.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-b1-$rep.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:13]: print("  ", k, x)
PY
done
