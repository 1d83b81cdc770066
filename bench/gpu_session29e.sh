#!/usr/bin/env bash
# Twenty-ninth session, run e: the new megakernel defaults (32 KB weight stream, waits without the
# fence) — CUDA tests, compute-sanitizer racecheck / synccheck on the 2-layer model, the fuzzer, and
# timings against the old forms and 256-thread workers.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q 2>&1 | tail -3
for tool in racecheck synccheck; do
  EMBER_NVRTC_LINEINFO=1 EMBER_MK_TIMEOUT_S=600 timeout 150 compute-sanitizer --tool $tool python3 bench/sanitize_megakernel.py \
    > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -c 'Race reported' "$OUT/$tool.log") race reports; $(grep 'SUMMARY' "$OUT/$tool.log" | tail -1); $(grep -c 'equal' "$OUT/$tool.log") equal lines"
done
grep -m1 "uniform_threads" "$OUT/racecheck.log" | cut -c1-300
timeout 300 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 2 --fuzz-runs 50 \
  --options '{"fenced_nostream": {"fence": true, "stream": 0}, "t256": {"threads": 256}}' \
  2>&1 | grep -v -i warn | tail -1
