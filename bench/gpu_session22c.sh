#!/usr/bin/env bash
# Twenty-second session, third run: the bf16 linear layers of BERT and the Llama prefill under tile
# overlays (128 x 192: one wave of tiles at 768 outputs), and the whole CUDA test suite.
set -u
. bench/gpu_env.sh
timeout 260 python3 bench/gemm_tiles.py --knobs '[{"BM": 128, "BN": 192, "stages": 4}, {"BM": 128, "BN": 128, "stages": 4}, {"persistent": true}, {"BM": 128, "BN": 192, "stages": 4, "persistent": true}]' --out "$OUT/gemm-tiles.json" 2>&1 | grep -v -i warn | grep -v "^ *return\|^ *warn"
timeout 330 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -6
