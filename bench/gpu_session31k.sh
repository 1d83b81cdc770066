#!/usr/bin/env bash
# Thirty-first session, run k: is decode attention's fixed ~4.8 us a kernel the cluster's
# co-scheduling (8 blocks of 133 KB must find 8 free SMs of one GPC before the next layer can
# start)? Clusters of 1 / 2 / 4 / 8 / 16 without splits, 4 and 8 warps, at 8K keys, batch 1.
set -u
. bench/gpu_env.sh
export OUT
timeout 300 python3 bench/attention.py --decode-layers 16 --variants \
  --decode-cases "1,8,4,8192,128;1,8,4,8192,64" \
  --decode-grid '{"warps": [4, 8], "BN": [16, 32], "stages": [2, 4], "cluster_splits": [[1, 1], [2, 1], [4, 1], [8, 1], [16, 1]], "kt": [1]}' \
  --out "$OUT/attention-decode-clusters.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-clusters.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["cfg"], r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:12]: print("  ", k, x)
    print("  errors", len([k for k, x in r.items() if isinstance(x, dict) and "error" in x]), "not ok", [k for k, x in v if not x["ok"]])
PY
