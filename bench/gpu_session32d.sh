#!/usr/bin/env bash
# Thirty-second session, run d: with the early keys the 8K loop is what is left (traced: 10.2 us of
# a 13.2 us layer, the first tiles already in shared memory, so the loop is bound by each warp's
# chain of products, not by HBM): more warps a block (two a scheduler), tile widths, ring depths and
# two score chains (kt 2) at batch 1; the batch-4 and 32K defaults again, against their neighbours.
set -u
. bench/gpu_env.sh
export OUT
show() {
python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["cfg"], r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:10]: print("  ", k, x)
    print("  errors", len([k for k, x in r.items() if isinstance(x, dict) and "error" in x]), "not ok", [k for k, x in v if not x["ok"]])
PY
}
timeout 330 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,8192,128;1,8,4,8192,64" \
  --decode-grid '{"warps": [4, 6, 8], "BN": [16, 32], "stages": [2, 3, 4], "cluster_splits": [[8, 1]], "kt": [1, 2], "gather": [1], "early_keys": [2]}' \
  --out "$OUT/attention-decode-b1.json" 2>&1 | grep -v -i warn | tail -1
show "$OUT/attention-decode-b1.json"
timeout 200 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "4,8,4,8192,128;1,8,4,32768,128" \
  --decode-grid '{"warps": [4], "BN": [16], "stages": [2, 3], "cluster_splits": [[4, 1], [8, 1], [2, 8]], "kt": [1], "gather": [1], "early_keys": [0, 2]}' \
  --out "$OUT/attention-decode-b4-32k.json" 2>&1 | grep -v -i warn | tail -1
show "$OUT/attention-decode-b4-32k.json"
