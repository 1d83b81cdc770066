#!/usr/bin/env bash
# Eighteenth session: compute-sanitizer over the tf32x3 wgmma forms; the attention backward baseline.
set -u
. bench/gpu_env.sh
for tool in memcheck racecheck; do timeout 150 compute-sanitizer --tool $tool python3 bench/sanitize_wgmma.py > "$OUT/sanitize-$tool.log" 2>&1; echo "compute-sanitizer $tool: exit $?"; grep -v -i warn "$OUT/sanitize-$tool.log" | tail -4; done
timeout 240 python3 bench/attention_backward.py --out "$OUT/attention-backward.json" 2>&1 | grep -v -i warn | tail -5
