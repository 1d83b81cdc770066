#!/usr/bin/env bash
# Twenty-third session: the real KernelBench (ScalingIntelligence/KernelBench at 423217d, vendored in
# third_party/KernelBench), 20 problems per level drawn at random (seed 0), at PyTorch's own precision
# (convs in TF32 as cuDNN's), eager and torch.compile in the same run. Resumable: a JSON left by an
# earlier call (RESUME=path in the tree) is continued.
set -u
. bench/gpu_env.sh
[ -n "${RESUME:-}" ] && cp "$RESUME" "$OUT/real-kb.json"
timeout 580 python3 bench/kernelbench.py third_party/KernelBench --sample ${SAMPLE:-20} --sample-seed 0 \
  --seeds 2 --trials 30 --warmup 3 --ember-precision torch --time-budget ${BUDGET:-480} \
  --out "$OUT/real-kb.json" --resume ${KB_ARGS:-} 2>&1 | grep -v -i warn | grep -v "^  " | tail -90
