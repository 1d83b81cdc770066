"""One Llama-1B-shaped decode step as a megakernel, run a few times: a target for Nsight Compute.

    ncu -k regex:em_megakernel -c 1 --section SpeedOfLight ... python bench/megakernel_once.py [--options JSON]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm import LLAMA_1B, write_checkpoint  # noqa: E402
from megakernel import clone, feed, step_programs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--options", default="{}", help="megakernel_options (JSON)")
    ap.add_argument("--kernels", action="store_true", help="the kernel-by-kernel program instead")
    ap.add_argument("--ckpt", default="/tmp/ember-llama1b-mk")
    args = ap.parse_args()
    import torch

    import ember.llm as L
    write_checkpoint(args.ckpt, dict(LLAMA_1B, num_hidden_layers=args.layers))
    llm = L.load(args.ckpt, device="cuda", max_seq_len=args.context + 64)
    opts = {} if args.kernels else {"megakernel": True, "megakernel_options": json.loads(args.options)}
    p = step_programs(llm, {"step": opts})["step"]
    f = clone(feed(llm.config, args.context + 64, args.context - 1))
    for _ in range(3):
        p.run(f, dims={"P": args.context - 1})
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
