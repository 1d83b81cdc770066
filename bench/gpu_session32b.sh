#!/usr/bin/env bash
# Thirty-second session, run b: the cluster combine gathered into rank 0 (`gather`, now the default
# where a cluster has no splits; its mbarrier initialised before the grid-dependency wait, the split
# cluster barrier arrived relaxed) and decode attention's first key tiles before its wait
# (`early_keys`, the kernel before triggering late: codegen/cuda_flash_early.py, set by the CUDA
# Target's program pass where that kernel writes neither K nor V).
# * CUDA tests: the decode knobs, early keys (3 layers in one replay, chained q), attention, LLM, megakernel;
# * bench/decode_trace.py: the default (gather + early 1) against early 0 / 2 and a 6-deep ring;
# * the 16-layer protocol over early_keys 0 / 1 / 2 x tiles x ring depth (every layer's output checked);
# * the Llama-1B decode step (kernels and megakernel) with the gather off and on.
set -u
. bench/gpu_env.sh
export OUT
timeout 230 python3 -m pytest -m cuda tests/test_attention_decode_early.py tests/test_attention_decode_knobs.py tests/ -k "decode or attention or llm or megakernel" \
  -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda tests rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; grep '^FAILED' "$OUT/cuda_tests.log" | head; tail -1 "$OUT/cuda_tests.log"
timeout 150 python3 bench/decode_trace.py --out "$OUT/decode-trace.json" \
  --extra '[{}, {"early_keys": 0}, {"early_keys": 2}, {"early_keys": 1, "stages": 6}]' 2>&1 | grep -v -i warn | grep '"layer": 8' | cut -c1-900
timeout 260 python3 bench/attention.py --decode-layers 16 --variants \
  --decode-cases "1,8,4,8192,128;1,8,4,8192,64;4,8,4,8192,128;1,8,4,32768,128" \
  --decode-grid '{"warps": [4], "BN": [16, 32], "stages": [4, 6], "cluster_splits": [[8, 1]], "kt": [1], "gather": [1], "early_keys": [0, 1, 2]}' \
  --out "$OUT/attention-decode-early.json" 2>&1 | grep -v -i warn | tail -1
python3 - "$OUT/attention-decode-early.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["decode_layers"]:
    v = sorted(((k, x) for k, x in r.items() if isinstance(x, dict) and "pct" in x), key=lambda kx: -kx[1]["pct"])
    print(r["B"], r["S"], r["D"], "default", r["cfg"], r["ember_us"], r["ember_pct_copy_bw"], "sdpa", r["sdpa_pct_copy_bw"], "ok", r["ok"])
    for k, x in v[:14]: print("  ", k, x)
    print("  errors", [(k, x["error"][:80]) for k, x in r.items() if isinstance(x, dict) and "error" in x][:3], "not ok", [k for k, x in v if not x["ok"]])
PY
EMBER_DECODE_GATHER=0 EMBER_DECODE_EARLY=0 EMBER_CACHE_DIR=/tmp/ember_cache_g0 timeout 150 python3 bench/megakernel.py --out "$OUT/megakernel-g0.json" \
  --contexts 1024 --fuzz-seeds 0 2>&1 | grep -v -i warn | tail -1
timeout 150 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 0 2>&1 | grep -v -i warn | tail -1
