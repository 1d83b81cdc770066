#!/usr/bin/env bash
# Thirty-second session, run n: `steal` "static" at head dim 64 with its default schedule (8 warps x
# 16 keys, 3 slots, kt 2) and at head dim 128 / 32K, twice.
set -u
. bench/gpu_env.sh
export OUT
for rep in 1 2; do
timeout 100 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,8192,64;1,8,4,32768,128" \
  --decode-grid '{"warps": [8, 4], "BN": [16], "stages": [3, 4], "cluster_splits": [[8, 1]], "kt": [2, 1], "gather": [1], "steal": [0, "static"]}' \
  --out "$OUT/attention-decode-static-$rep.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-static-$rep.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:8]: print("  ", k, x)
PY
done
