"""Where a megakernel and its kernels disagree (a 2-layer Llama-1B-shaped decode step): per output
and per cache, for serial (one worker) and parallel megakernels, at several positions.

    python bench/megakernel_debug.py"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm import LLAMA_1B, write_checkpoint  # noqa: E402
from megakernel import clone, feed, run, step_programs  # noqa: E402


def diff(a, b) -> str:
    import torch
    out = []
    for k in a:
        if not torch.equal(a[k], b[k]):
            d = (a[k].float() - b[k].float()).abs()
            idx = (d > 0).nonzero()
            out.append(f"{k}: max {float(d.max()):.3g} at {idx[0].tolist()} ({len(idx)} differ)")
    return "; ".join(out) or "equal"


def main() -> int:
    import ember.llm as L
    max_seq = 1088
    write_checkpoint("/tmp/mkdbg", dict(LLAMA_1B, num_hidden_layers=2))
    llm = L.load("/tmp/mkdbg", device="cuda", max_seq_len=max_seq)
    progs = step_programs(llm, {"ref": {"megakernel_options": {"as_kernels": True}},
                                "serial": {"megakernel": True, "megakernel_options": {"workers": 1}},
                                "mk": {"megakernel": True}})
    for P in (5, 100, 255, 256, 259, 600, 1023):
        f0 = feed(llm.config, max_seq, P, seed=P)
        res = {}
        for n, p in progs.items():
            for rep in range(2):
                f = clone(f0)
                o = run(p, f, P)
                o.update(f)
                res[f"{n}{rep}"] = o
        print(f"P {P}: ref0/ref1 {diff(res['ref0'], res['ref1'])} | serial/ref {diff(res['serial0'], res['ref0'])} | "
              f"mk/ref {diff(res['mk0'], res['ref0'])} | mk0/mk1 {diff(res['mk0'], res['mk1'])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
