#!/usr/bin/env bash
# Twenty-second session, fifth run: the staged (shared-memory) wgmma epilogue — the whole CUDA test
# suite, then the models' linear layers with it (default) and without (sepi false).
set -u
. bench/gpu_env.sh
timeout 300 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -8
timeout 240 python3 bench/gemm_tiles.py --knobs '[{"sepi": false}]' --out "$OUT/gemm-tiles-sepi.json" 2>&1 | grep -v -i warn | grep -v "^ *return\|^ *warn"
