#!/usr/bin/env bash
# Thirty-second session, run o: knob `l2_ahead` — with the early keys, each block's next K / V rows
# past its ring asked of L2 before the wait (HBM busy across the kernel before's combine and the
# launch gap); 16 layers, 0 / 32 / 64 / 128 / 256 KB an operand.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_attention_decode_early.py -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head
timeout 150 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128" \
  --decode-grid '{"warps": [4], "BN": [16], "stages": [4], "cluster_splits": [[8, 1]], "kt": [1], "gather": [1], "l2_ahead": [0, 32768, 65536, 131072, 262144]}' \
  --out "$OUT/attention-decode-l2.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-l2.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:6]: print("  ", k, x)
PY
