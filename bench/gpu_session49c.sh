#!/usr/bin/env bash
# Forty-ninth session: overlays on the prefill's qkv (96 tiles of 128 x 128 on 132 SMs): 96-wide tiles (128 of them),
# 128 x 192 over a cluster of 2, ping-pong 64 x 96; and down's cluster at 5 stages.
set -u
. bench/gpu_env.sh
export OUT
OFF='"persistent": false, "sown": false, "shalf": false'
SHORT_K_CFGS="[null, {\"BN\": 96, \"stages\": 6}, {\"BN\": 96, \"stages\": 7, $OFF}, {\"BN\": 192, \"stages\": 4, \"cluster\": 2, $OFF},
  {\"BN\": 160, \"stages\": 5, \"cluster\": 2, $OFF}, {\"BM\": 64, \"BN\": 96, \"stages\": 8, \"pingpong\": true, \"group\": 8, \"sown\": false, \"shalf\": false},
  {\"BN\": 96, \"stages\": 6, \"cluster\": 2, $OFF}, {\"stages\": 5}, {\"BN\": 64, \"stages\": 8, \"cluster\": 2, $OFF}]" \
  timeout 200 python3 bench/short_k_ab.py --suite "prefill512 qkv,prefill512 down,prefill512 o" --out "$OUT/qkv-overlays.json" 2>&1 | grep -v -i warn | tail -30
