"""The host side of a serving step (issue 23: inter-token latency 4-17 ms against a 1.4 ms decode
step on the H100). Times the engine's synchronous step — `LLM._step("decode", ...)` then `choose`
(greedy: the program's argmax read back) — with the step inputs copied into buffers kept per
(input, rows) (`persistent_inputs`, the default) against fresh device tensors every step (before),
interleaved, at batch 1 and 8, on a Llama-3.2-1B-shaped bf16 checkpoint (random weights); and the
step-ahead `generate` for reference.

    python bench/llm_host_step.py --out bench/results/llm-host-step-DATE.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm import LLAMA_1B, write_checkpoint  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--ckpt", default="/tmp/ember-llama1b-host")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batches", default="1,8")
    args = ap.parse_args()
    import torch

    import ember.llm as L
    if not os.path.exists(os.path.join(args.ckpt, "config.json")):
        write_checkpoint(args.ckpt, LLAMA_1B)
    batches = [int(b) for b in args.batches.split(",")]
    llm = L.load(args.ckpt, device="cuda", dtype="bfloat16", max_seq_len=1024, max_batch=max(batches))
    rows = []
    for b in batches:
        llm.program("decode", b)
        start = np.zeros(b, np.int64)
        times = {True: [], False: []}
        for rnd in range(4):
            for persistent in (True, False):
                llm.persistent_inputs = persistent
                P, tok = 64, np.ones((b, 1), np.int64)
                ts = []
                for n in range(args.steps):
                    t = time.perf_counter()
                    out = llm._step("decode", tok, (P - start)[:, None], start, P)
                    tok = llm.choose(out, [None] * b, [None] * b)[:, None]
                    ts.append(time.perf_counter() - t)
                    P += 1
                times[persistent].append(statistics.median(ts[2:]) * 1e3)
        row = {"batch": b, "step_ms_persistent": min(times[True]), "step_ms_fresh": min(times[False]),
               "rounds_persistent": times[True], "rounds_fresh": times[False]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    llm.persistent_inputs = True
    prompt = list(range(1, 33))
    llm.generate([prompt], max_new_tokens=8)
    t = time.perf_counter()
    llm.generate([prompt], max_new_tokens=64)
    gen = (time.perf_counter() - t) / 64 * 1e3
    print(f"generate (step ahead), batch 1: {gen:.3f} ms/token", flush=True)
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows, "generate_ms_per_token": gen}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
