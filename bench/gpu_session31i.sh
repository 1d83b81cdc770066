#!/usr/bin/env bash
# Thirty-first session, run i (run h again, the maps fixed: a box extent for every dimension): flash-decoding's knob tma (keys-major; K and V tiles as tensor-map copies of 64-column
# boxes, 128-byte swizzled, one lane issuing them on the slot's mbarrier: ~270 instructions a tile, four
# copies instead of 32 bulk ones) — its CUDA tests against float64, then the 16-layer protocol at 8K
# keys (D 128 / 64, batch 1 / 4) and 32K over tiles and ring depths.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/test_attention.py -k "keys_major" -p no:cacheprovider -p no:warnings -n 10 -rf -q > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head; tail -1 "$OUT/tests.log"
timeout 330 python3 bench/attention.py --decode-layers 16 --variants \
  --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128;1,8,4,32768,128" \
  --decode-grid '{"warps": [4], "BN": [16, 32], "stages": [2, 3, 4], "cluster_splits": [[8, 1]], "kt": [1, 2], "bulk": ["tma"]}' \
  --out "$OUT/attention-decode-tma2.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-tma2.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["cfg"], r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:8]: print("  ", k, x)
    print("  errors", len([k for k, x in r.items() if isinstance(x, dict) and "error" in x]), "not ok", [k for k, x in v if not x["ok"]])
PY
