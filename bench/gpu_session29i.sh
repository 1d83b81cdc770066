#!/usr/bin/env bash
# Twenty-ninth session, run i: two workers per SM as the default (megakernel_choice.PER_SM) — CUDA
# tests, racecheck on the 2-layer model, the fuzzer, the trace — against the previous default (three
# workers leaving 96 KB to L1) and 256-thread workers (two and one per SM).
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q 2>&1 | tail -3
EMBER_NVRTC_LINEINFO=1 EMBER_MK_TIMEOUT_S=600 timeout 120 compute-sanitizer --tool racecheck python3 bench/sanitize_megakernel.py \
  > "$OUT/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep 'SUMMARY' "$OUT/racecheck.log" | tail -1); $(grep -c 'equal' "$OUT/racecheck.log") equal lines"
timeout 330 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 2 --fuzz-runs 50 --trace-dir "$OUT" \
  --options '{"l1_3": {"l1_reserve": 98304}, "ps2_t256": {"per_sm": 2, "threads": 256}, "ps1_t256": {"per_sm": 1, "threads": 256}}' \
  2>&1 | grep -v -i warn | tail -1
