#!/usr/bin/env bash
# Twenty-fifth session, run e: the whole CUDA suite on the final build (many small batched products
# now take tensor cores: Mamba2's chunk states), then the level-3 sample's sixteen non-recurrent
# problems re-measured on it, resumed into a copy of run d's JSON (the four recurrent problems'
# kernels are the same on this build: their products have 10 rows and no batch).
set -u
. bench/gpu_env.sh
export OUT
timeout 170 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q 2>&1 | tee "$OUT/cuda_tests.log" | tail -4
python3 - <<'PY'
import json, os
d = json.load(open("bench/results/gpu-session25-2026-11-27/d/real-kb-l3.json"))
rec = {"36_LSTMHn", "39_GRU", "40_GRUHidden", "42_GRUBidirectionalHidden"}
d["problems"] = [r for r in d["problems"] if r["name"] in rec]
json.dump(d, open(os.environ["OUT"] + "/real-kb-l3.json", "w"))
PY
timeout ${KB_S:-400} python3 bench/kernelbench.py third_party/KernelBench --sample 20 --sample-seed 0 --level 3 --seeds 2 --trials 30 --warmup 3 \
  --ember-precision torch --time-budget $(( ${KB_S:-400} - 60 )) --resume \
  --out "$OUT/real-kb-l3.json" ${KB_ARGS:-} 2>&1 | grep -v -i warn | grep -v "^  " | tail -28
