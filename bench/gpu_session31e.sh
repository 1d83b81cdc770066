#!/usr/bin/env bash
# Thirty-first session, run e: the whole CUDA suite on the build with keys-major decode products as
# the default at head dim 128 (knob kt); then flash-decoding's instruction diet measured: kt 2 (two
# chains of score products), affine (each lane's chunk offsets and ldmatrix offsets computed once,
# kept in registers) over tiles and ring depths, 16 layers in one replay.
set -u
. bench/gpu_env.sh
export OUT
timeout 290 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda suite rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -2 "$OUT/cuda_tests.log"
timeout 280 python3 bench/attention.py --decode-layers 16 --variants \
  --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128" \
  --decode-grid '{"warps": [4], "BN": [16, 32], "stages": [2, 3, 4], "cluster_splits": [[8, 1]], "kt": [0, 1, 2], "affine": [0, 1]}' \
  --out "$OUT/attention-decode-diet.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-diet.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["cfg"], r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:8]: print("  ", k, x)
    print("  errors", len([k for k, x in r.items() if isinstance(x, dict) and "error" in x]), "not ok", [k for k, x in v if not x["ok"]])
PY
