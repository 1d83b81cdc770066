#!/usr/bin/env bash
# For the thirty-third session (prepared in the thirty-second; not run): decide `pipe` at head dim
# 128 and `steal` "static" at head dim 64 as defaults — three interleaved repetitions of each case
# with the default schedule plus the knob, 16 layers in one replay (bench/attention.py).
set -u
. bench/gpu_env.sh
export OUT
for rep in 1 2 3; do
timeout 120 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,8192,128;4,8,4,8192,128;1,8,4,32768,128" \
  --decode-grid '{"warps": [4], "BN": [16], "stages": [4], "cluster_splits": [[8, 1], [4, 1]], "kt": [1], "gather": [1], "pipe": [0, 1]}' \
  --out "$OUT/d128-$rep.json" 2>&1 | grep -v -i warn | tail -1
timeout 80 python3 bench/attention.py --decode-layers 16 --variants --decode-cases "1,8,4,8192,64;1,8,4,4096,64" \
  --decode-grid '{"warps": [8], "BN": [16], "stages": [3], "cluster_splits": [[8, 1]], "kt": [2], "gather": [1], "steal": [0, "static"]}' \
  --out "$OUT/d64-$rep.json" 2>&1 | grep -v -i warn | tail -1
done
python3 - "$OUT" <<'PY'
import glob, json, sys, collections
acc = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/d*-*.json")):
    for r in json.load(open(f))["decode_layers"]:
        acc[(r["B"], r["S"], r["D"], "default")].append(r["ember_pct_copy_bw"])
        for k, x in r.items():
            if isinstance(x, dict) and "pct" in x:
                acc[(r["B"], r["S"], r["D"], k)].append(x["pct"])
for k, v in sorted(acc.items()):
    print(k, v, round(sum(v) / len(v), 1))
PY
