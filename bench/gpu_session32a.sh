#!/usr/bin/env bash
# Thirty-second session, run a (prepared in the thirty-first, NOT RUN: its device time was spent):
# where decode attention's fixed ~4.8 us a layer goes — flash-decoding's knob `trace` (thread 0 of
# every block stamps %globaltimer at its start, after the grid-dependency wait, when q is in shared
# memory, when its keys are done, after the block's and the cluster's combines, at its end): its
# CUDA test, then bench/decode_trace.py over 16 layers at 8K / 32K keys (D 128) and 8K (D 64).
set -u
. bench/gpu_env.sh
export OUT
timeout 150 python3 -m pytest -m cuda tests/test_attention.py -k "trace or keys_major" -p no:cacheprovider -p no:warnings -n 8 -rf -q > "$OUT/tests.log" 2>&1
echo "tests rc=$? $(grep -c '^FAILED' "$OUT/tests.log") FAILED"; grep '^FAILED' "$OUT/tests.log" | head; tail -1 "$OUT/tests.log"
timeout 200 python3 bench/decode_trace.py --out "$OUT/decode-trace.json" 2>&1 | grep -v -i warn | tail -4
