#!/usr/bin/env bash
# Thirty-second session, run h: knob `pipe` (keys-major: the next tile's score products issued before
# this tile's softmax and value products, so a warp's two dependent chains interleave) — its CUDA
# tests, the trace, and the 16-layer protocol against the defaults.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_attention_decode_knobs.py -k "pipe or keys_major or gather" -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
timeout 120 python3 bench/decode_trace.py --out "$OUT/decode-trace.json" --cases "1,8,4,8192,128;1,8,4,8192,64" \
  --extra '[{}, {"pipe": 1}]' 2>&1 | grep -v -i warn | grep '"layer": 8' | cut -c1-900
timeout 260 python3 bench/attention.py --decode-layers 16 --variants \
  --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128;1,8,4,32768,128" \
  --decode-grid '{"warps": [4, 8], "BN": [16, 32], "stages": [3, 4], "cluster_splits": [[8, 1], [4, 1]], "kt": [1, 2], "gather": [1], "pipe": [0, 1]}' \
  --out "$OUT/attention-decode-pipe.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-pipe.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["cfg"], r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:12]: print("  ", k, x)
    print("  errors", len([k for k, x in r.items() if isinstance(x, dict) and "error" in x]), "not ok", [k for k, x in v if not x["ok"]])
PY
