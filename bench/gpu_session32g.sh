#!/usr/bin/env bash
# Thirty-second session, run g: decode attention at the Llama-1B step's scale (1024 keys, 128 a block
# in clusters of 8: all start and combine). Clusters of 1 / 2 / 4 / 8 as 16 layers at 1024 keys, and
# the Llama-1B decode step at contexts 1024 and 4096 with the attention's cluster forced to 2 / 4
# (EMBER_DECODE_CLUSTER, an A/B switch) against the default 8.
set -u
. bench/gpu_env.sh
export OUT
timeout 200 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,1024,64;1,8,4,1024,128;1,8,4,4096,64" \
  --decode-grid '{"warps": [4], "BN": [16, 32], "stages": [2, 4], "cluster_splits": [[1, 1], [2, 1], [4, 1], [8, 1]], "kt": [1], "gather": [1]}' \
  --out "$OUT/attention-decode-1k.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-1k.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["cfg"], r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_us"], r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:16]: print("  ", k, x)
PY
for c in 2 4; do
EMBER_DECODE_CLUSTER=$c EMBER_CACHE_DIR=/tmp/ember_cache_c$c timeout 170 python3 bench/megakernel.py --out "$OUT/megakernel-c$c.json" \
  --contexts 1024,4096 --fuzz-seeds 0 2>&1 | grep -v -i warn | grep context | cut -c1-200
done
timeout 170 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024,4096 --fuzz-seeds 0 2>&1 | grep -v -i warn | grep context | cut -c1-200
