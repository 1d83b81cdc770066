#!/usr/bin/env bash
# Thirtieth session, run b: integer index arithmetic no longer folded into tables (kernel/fold.py),
# decode attention's first key tiles asked for before q's rotary prologue (codegen/cuda_flash_decode.py),
# a row kernel's tail-only loads (a norm's weight) issued with the first stage's (codegen/cuda_rows.py
# plan.ahead): the whole CUDA suite, the megakernel (fuzz, timings, trace), then ncu's warp stall
# samples of the megakernel per task function.
set -u
. bench/gpu_env.sh
export OUT
timeout 270 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda suite rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; tail -3 "$OUT/cuda_tests.log"
timeout 240 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 4 --fuzz-runs 50 \
  --trace-dir "$OUT" --options '{"ps1_t256": {"per_sm": 1, "threads": 256}, "rep": {"replicate": true}}' \
  2>&1 | grep -v -i warn | tail -1
EMBER_NVRTC_LINEINFO=1 timeout 200 ncu --clock-control none --section WarpStateStats --section SourceCounters \
  -k em_megakernel --launch-skip 2 --launch-count 1 -o "$OUT/mk" python3 bench/megakernel_once.py > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"; tail -3 "$OUT/ncu.log"
ncu -i "$OUT/mk.ncu-rep" --page source --csv --print-source sass 2> "$OUT/sass_err.log" | gzip > "$OUT/mk_sass.csv.gz"
ncu -i "$OUT/mk.ncu-rep" --page details > "$OUT/mk_details.txt" 2>&1
ls -la "$OUT"; python3 bench/megakernel_stalls.py "$OUT/mk_sass.csv.gz" --top 30 2>&1 | tee "$OUT/stalls.txt" | head -40
