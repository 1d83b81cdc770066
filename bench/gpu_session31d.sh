#!/usr/bin/env bash
# Thirty-first session, run d: flash-decoding's keys-major products (knob `kt`,
# codegen/cuda_flash_kt.py): its CUDA tests against float64 attention, then the 16-layer decode
# protocol at 8K keys (D 128 and 64, batch 1 and 4) and 32K, the default against kt over a small grid.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 -m pytest -m cuda tests/test_attention.py -k "keys_major or decode" -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/kt_tests.log" 2>&1
echo "kt tests rc=$? $(grep -c '^FAILED' "$OUT/kt_tests.log") FAILED"; tail -3 "$OUT/kt_tests.log"
timeout 380 python3 bench/attention.py --decode-layers 16 --variants \
  --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128;1,8,4,32768,128" \
  --decode-grid '{"warps": [4], "BN": [16, 32], "stages": [2, 4], "cluster_splits": [[8, 1], [2, 8]], "kt": [0, 1]}' \
  --out "$OUT/attention-decode-kt.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-kt.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:6]: print("  ", k, x)
    print("  errors", [k for k, x in r.items() if isinstance(x, dict) and "error" in x][:4], "not ok", [k for k, x in v if not x["ok"]])
PY
