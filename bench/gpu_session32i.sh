#!/usr/bin/env bash
# Thirty-second session, run i: knob `pipe` on the 16-layer protocol (run h's grid ran past its time
# limit): batch 1 x 8K, head dim 128 over rings of 3 / 4 and kt 1 / 2; batch 4 and 32K at their defaults'
# tiles with rings of 3 / 4.
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
    print("  not ok", [k for k, x in v if not x["ok"]])
PY
}
timeout 150 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,8192,128" \
  --decode-grid '{"warps": [4], "BN": [16], "stages": [3, 4], "cluster_splits": [[8, 1]], "kt": [1, 2], "gather": [1], "pipe": [0, 1]}' \
  --out "$OUT/attention-decode-pipe-b1.json" 2>&1 | grep -v -i warn | tail -1
show "$OUT/attention-decode-pipe-b1.json"
timeout 150 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "4,8,4,8192,128;1,8,4,32768,128" \
  --decode-grid '{"warps": [4], "BN": [16], "stages": [3, 4], "cluster_splits": [[4, 1], [8, 1]], "kt": [1], "gather": [1], "pipe": [0, 1]}' \
  --out "$OUT/attention-decode-pipe-b4.json" 2>&1 | grep -v -i warn | tail -1
show "$OUT/attention-decode-pipe-b4.json"
