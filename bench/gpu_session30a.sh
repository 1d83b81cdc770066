#!/usr/bin/env bash
# Thirtieth session, run a (prepared in the twenty-ninth, NOT RUN: no device time was left): the
# whole CUDA suite on the twenty-ninth session's final build (the builder's few-row recompute
# revived behind Target.fold_norms, megakernel_options as_kernels honoured, per-slice megakernels,
# auto over several megakernel candidates), then the megakernel: per-slice (4, 16), one 256-thread
# worker per SM, flash-decoding in 16 splits at 2 workers per SM, the one-block norms replicated into
# their GEMVs' tasks (option replicate), streams inside tasks (stream_blocks); task_kernels now the
# real task schedules as kernels; 1000 fuzzed runs of the new default (fenceless waits, 2 workers
# per SM, the 32 KB stream). About 13 minutes of device time.
set -u
. bench/gpu_env.sh
export OUT
timeout 270 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf -q > "$OUT/cuda_tests.log" 2>&1
echo "cuda suite rc=$? $(grep -o '\.' "$OUT/cuda_tests.log" | wc -l) dots, $(grep -c '^FAILED' "$OUT/cuda_tests.log") FAILED"; tail -3 "$OUT/cuda_tests.log"
timeout 260 python3 bench/megakernel.py --out "$OUT/megakernel.json" --contexts 1024 --fuzz-seeds 10 --fuzz-runs 100 \
  --options '{"ps1_t256": {"per_sm": 1, "threads": 256}, "ds16": {"decode_splits": 16},
  "spin4k": {"spin": 4096}, "spin_nosleep": {"spin": 1000000, "sleep_ns": 0}}' \
  2>&1 | grep -v -i warn | tail -1
# (the options not yet run on a GPU in a process of their own: a hang traps and ends that process only)
timeout 240 python3 bench/megakernel.py --out "$OUT/megakernel-new.json" --contexts 1024 --fuzz-seeds 0 \
  --options '{"slices4": {"slices": 4}, "slices16": {"slices": 16}, "rep": {"replicate": true}, "sb2": {"stream_blocks": 2}, "sb4": {"stream_blocks": 4},
  "dst3": {"decode_stages": 3}}' \
  2>&1 | grep -v -i warn | tail -1
