#!/usr/bin/env bash
# Thirty-second session, run a (prepared in the thirty-first, NOT RUN: its device time was spent):
# where decode attention's fixed ~4.8 us a layer goes, and one cluster barrier fewer.
# * knob `trace` (thread 0 of every block stamps %globaltimer at its start, after the
#   grid-dependency wait, q in shared memory, keys done, block combined, cluster synced, end) and
#   knob `gather` (the other blocks' triples into rank 0's shared memory on an mbarrier, those
#   blocks exit; codegen/cuda_flash_gather.py): their CUDA tests against float64;
# * bench/decode_trace.py: each layer's phases over 16 layers, default and gather;
# * the 16-layer protocol, gather against the default, at 8K (D 128 / 64, batch 1 / 4) and 32K.
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_attention_decode_knobs.py -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head; tail -1 "$OUT/tests.log"
timeout 150 python3 bench/decode_trace.py --out "$OUT/decode-trace.json" --extra '[{}, {"gather": 1}]' 2>&1 | grep -v -i warn | tail -6
timeout 200 python3 bench/attention.py --decode-layers 16 --variants \
  --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128;1,8,4,32768,128" \
  --decode-grid '{"warps": [4], "BN": [16, 32], "stages": [2, 4], "cluster_splits": [[8, 1], [4, 1]], "kt": [1], "gather": [0, 1]}' \
  --out "$OUT/attention-decode-gather.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-gather.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["cfg"], r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:8]: print("  ", k, x)
    print("  errors", len([k for k, x in r.items() if isinstance(x, dict) and "error" in x]), "not ok", [k for k, x in v if not x["ok"]])
PY
