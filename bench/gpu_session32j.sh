#!/usr/bin/env bash
# Thirty-second session, run j: knob `steal` (codegen/cuda_flash_steal.py: the cluster's key tiles
# one pool, each warp's later tiles from a counter in rank 0) — its CUDA tests, the trace, and the
# 16-layer protocol against the defaults.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_attention_decode_knobs.py tests/test_attention_decode_early.py -k "steal or early or gather" -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
timeout 100 python3 bench/decode_trace.py --out "$OUT/decode-trace.json" --cases "1,8,4,8192,128;1,8,4,8192,64" \
  --extra '[{}, {"steal": 1}]' 2>&1 | grep -v -i warn | grep '"layer": 8' | cut -c1-900
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
timeout 150 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,8192,128;1,8,4,8192,64" \
  --decode-grid '{"warps": [4, 8], "BN": [16], "stages": [3, 4], "cluster_splits": [[8, 1]], "kt": [1, 2], "gather": [1], "steal": [0, 1]}' \
  --out "$OUT/attention-decode-steal-b1.json" 2>&1 | grep -v -i warn | tail -1
show "$OUT/attention-decode-steal-b1.json"
timeout 120 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "4,8,4,8192,128;1,8,4,32768,128" \
  --decode-grid '{"warps": [4], "BN": [16], "stages": [2, 4], "cluster_splits": [[4, 1], [8, 1]], "kt": [1], "gather": [1], "steal": [0, 1]}' \
  --out "$OUT/attention-decode-steal-b4.json" 2>&1 | grep -v -i warn | tail -1
show "$OUT/attention-decode-steal-b4.json"
