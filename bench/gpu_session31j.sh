#!/usr/bin/env bash
# Thirty-first session, run j: flash-decoding with deeper rings (stages 5 / 6, new) and 6 warps at
# 8K keys — a warp's tile costs ~2 us of dependent latency and the ring's depth is what keeps bytes
# in flight while it computes (bulk / tensor-map copies, fewer instructions, measured slower: g/, i/).
set -u
. bench/gpu_env.sh
export OUT
timeout 300 python3 bench/attention.py --decode-layers 16 --variants \
  --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128" \
  --decode-grid '{"warps": [4, 6, 8], "BN": [16, 32], "stages": [3, 4, 5, 6], "cluster_splits": [[8, 1]], "kt": [1]}' \
  --out "$OUT/attention-decode-deep.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-deep.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["cfg"], r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:10]: print("  ", k, x)
    print("  errors", len([k for k, x in r.items() if isinstance(x, dict) and "error" in x]), "not ok", [k for k, x in v if not x["ok"]])
PY
