"""The bf16 linear layers of the real models (BERT-base 32 x 128 tokens, a Llama-3.2-1B prefill of
512 tokens) one at a time, Ember's default `wgmma` schedule against overlays of its knobs (tile,
stages, persistence; bench/knob_sweep.py's mechanism, laid over every `wgmma` kernel) and of the
split pass's thresholds, and cuBLAS through torch eager. Graph replays for Ember, CUDA events for
torch. Not a test: how the default tile and split rules are chosen.

    python bench/gemm_tiles.py --knobs '[{"BM": 128, "BN": 192, "stages": 4}, {"_split": {"k_long": 1 << 30}}]' --out F
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conv_sweep import sweep_overlays  # noqa: E402
from run import time_torch, versions  # noqa: E402

# (name, rows, out features, in features)
SHAPES = [("bert qkvo 768>768", 4096, 768, 768), ("bert up 768>3072", 4096, 3072, 768),
          ("bert down 3072>768", 4096, 768, 3072), ("llama q/o 2048>2048", 512, 2048, 2048),
          ("llama kv 2048>512", 512, 512, 2048), ("llama up 2048>8192", 512, 8192, 2048),
          ("llama down 8192>2048", 512, 2048, 8192), ("llama head 2048>128256", 512, 128256, 2048)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--knobs", default="[]")
    ap.add_argument("--only", default=None)
    ap.add_argument("--out")
    a = ap.parse_args()
    overlays = [None] + [dict(o, _on=o.get("_on", "wgmma")) if set(o) - {"_split"} else o for o in json.loads(a.knobs)]
    rows = []
    for name, m, n, k in SHAPES:
        if a.only and not any(o in name for o in a.only.split(",")):
            continue
        torch.manual_seed(0)
        lin = torch.nn.Linear(k, n, bias=False).cuda().to(torch.bfloat16)
        xs = (torch.randn(m, k, device="cuda", dtype=torch.bfloat16),)
        with torch.no_grad():
            ref = lin(*xs).float()
            eager = time_torch(lambda: lin(*xs), "cuda")
        rows.append(sweep_overlays(name, lin, xs, ref, eager, 2 * m * n * k, overlays, "eager (cuBLAS)", 24))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "date": str(datetime.datetime.now()),
                       "versions": versions("cuda"), "rows": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
