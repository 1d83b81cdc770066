#!/usr/bin/env bash
# Forty-ninth session: compute-sanitizer over the wgmma kernels, the new defaults' forms included (cluster k split,
# ping-pong, shalf): memcheck, racecheck, synccheck.
set -u
. bench/gpu_env.sh
export OUT
for tool in memcheck racecheck synccheck; do
  timeout 170 compute-sanitizer --tool $tool python3 bench/sanitize_wgmma.py > "$OUT/sanitize-$tool.log" 2>&1
  echo "compute-sanitizer $tool: exit $?"; grep -v -i warn "$OUT/sanitize-$tool.log" | tail -3
done
