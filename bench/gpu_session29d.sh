#!/usr/bin/env bash
# Twenty-ninth session, run d: the megakernel's waits without the fence after their acquire load
# (option fence=False: acquire, then the block barrier, as CUTLASS's semaphores) — the fuzzer runs
# on that variant (random dealing, injected sleeps) — alone and with a 32 KB weight stream.
set -u
. bench/gpu_env.sh
export OUT
timeout 100 python3 -m pytest -m cuda tests/test_megakernel_cuda.py -p no:cacheprovider -p no:warnings -n 7 -rf -q 2>&1 | tail -3
timeout 330 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 3 --fuzz-runs 50 \
  --fuzz-options '{"fence": false}' \
  --options '{"nofence": {"fence": false}, "nofence_s32k": {"fence": false, "stream": 32768}}' \
  2>&1 | grep -v -i warn | tail -3
