#!/usr/bin/env bash
# Twentieth session: where ResNet-50 spends its time (Ember bf16 / f32 kernels, torch eager's bf16
# kernels), the attention backward and the GPT training step after softmax shifts lost their
# gradient (autograd/shift.py), and the whole CUDA suite.
set -u
. bench/gpu_env.sh
timeout 150 python3 bench/gpu_models.py --profile resnet50 bf16 70 6 2>&1 | grep -v -i warn > "$OUT/resnet50-bf16-profile.txt"; head -3 "$OUT/resnet50-bf16-profile.txt"
timeout 100 python3 bench/gpu_models.py --profile resnet50 f32 70 0 2>&1 | grep -v -i warn > "$OUT/resnet50-f32-profile.txt"; head -3 "$OUT/resnet50-f32-profile.txt"
timeout 60 python3 - <<'PY' 2>&1 | grep -v -i warn > "$OUT/resnet50-bf16-torch-profile.txt"
import sys, torch
sys.path.insert(0, "bench")
from gpu_models import MODELS
model, inputs, _ = MODELS["resnet50 b32"]()
model = model.cuda().to(torch.bfloat16); ins = inputs(torch.bfloat16)
with torch.no_grad():
    for _ in range(3): model(*ins)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        model(*ins); torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=40, max_name_column_width=90))
PY
timeout 120 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | cut -c1-400
timeout 200 python3 bench/train.py --device cuda --only gpt6x512 --no-torch-compile --out "$OUT/train.json" 2>&1 | grep -v -i warn | tail -5
timeout 280 python3 -m pytest -m cuda tests/ -p no:cacheprovider -p no:warnings -n 14 -rf 2>&1 | tee "$OUT/cuda_tests.log" | grep -v "^\[\|^\.\|^s" | tail -15
