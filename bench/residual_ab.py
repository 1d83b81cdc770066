"""The decode step's residual stream materialised (rule 7b at a row's size) against inlined into
every norm (the old floor: 2^18 elements), kernel by kernel and as a megakernel, in one run.

    python bench/residual_ab.py --out DIR [--layers 16] [--context 1024] [--trace]

Each program is checked against the first (greedy next token equal, logits close) and timed as one
step in a CUDA graph (median of 50, alternated over 3 rounds); with --trace, the megakernel of the
materialised form is also traced (Perfetto JSON and each launch's span in DIR)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm import LLAMA_1B, copy_bandwidth, cuda_time, write_checkpoint  # noqa: E402
from megakernel import clone, feed, run, step_programs  # noqa: E402

INLINED = 1 << 18  # the floor before: a decode row (2048) is below it


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--ckpt", default="/tmp/ember-llama1b-mk")
    ap.add_argument("--megakernels", default="old,new,new_synced", help="which megakernels to build")
    args = ap.parse_args()
    import torch

    import ember.llm as L
    from ember.kernel import partition
    os.makedirs(args.out, exist_ok=True)
    cfg = dict(LLAMA_1B, num_hidden_layers=args.layers)
    w = write_checkpoint(args.ckpt, cfg)
    weight_bytes = 2 * sum(v.numel() for v in w.values())
    max_seq = args.context + 64
    llm = L.load(args.ckpt, device="cuda", max_seq_len=max_seq)
    new_floor = partition.REREAD_NUMEL
    mks = args.megakernels.split(",")
    progs = {}
    for tag, floor in (("old", INLINED), ("new", new_floor)):
        partition.REREAD_NUMEL = floor
        variants = {f"kernels_{tag}": {}}
        if tag in mks:
            variants[f"megakernel_{tag}"] = {"megakernel": True}
        if f"{tag}_synced" in mks:
            variants[f"megakernel_{tag}_synced"] = {"megakernel": True, "megakernel_options": {"free_running": False}}
        if tag == "new" and args.trace:
            variants["traced"] = {"megakernel": True, "megakernel_options": {"trace": True}}
        t0 = time.perf_counter()
        progs.update(step_programs(llm, variants))
        print(f"{tag}: built in {time.perf_counter() - t0:.1f} s", flush=True)
    partition.REREAD_NUMEL = new_floor
    c = llm.config
    P = args.context - 1
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "model": f"Llama-3.2-1B shapes ({args.layers} layers), random bf16 weights, batch 1", "context": args.context,
           "launches": {n: len(p.launches) for n, p in progs.items()}}
    f0 = feed(c, max_seq, P, seed=1)
    outs = {n: run(p, clone(f0), P) for n, p in progs.items()}
    ref = outs["kernels_old"]
    res["check"] = {n: {"next_equal": bool(torch.equal(o["next"], ref["next"])),
                        "logits_max_abs_diff": float((o["logits"] - ref["logits"]).abs().max()),
                        "logit_scale": float(ref["logits"].abs().max())} for n, o in outs.items()}
    print(json.dumps(res["check"]), flush=True)
    times = {n: [] for n in progs if n != "traced"}
    for _ in range(3):
        for n in times:
            f = clone(f0)
            times[n].append(cuda_time(lambda: progs[n].run(f, dims={"P": P}), 50))
    bw = copy_bandwidth()
    kv_bytes = 2 * c.layers * c.kv_heads * args.context * c.head_dim * 2
    res["floor_ms"] = (weight_bytes + kv_bytes) / bw * 1e3
    res["ms"] = {n: min(v) for n, v in times.items()}
    res["ms_rounds"] = times
    print(json.dumps({"floor_ms": res["floor_ms"], "ms": res["ms"]}), flush=True)
    if args.trace:
        from ember.backends.cuda_megakernel import chrome_trace, launch_spans, read_trace
        tp = progs["traced"]
        f = clone(f0)
        for _ in range(3):
            tp.run(f, dims={"P": P})
        rows = read_trace(tp)
        spans = launch_spans(rows)
        res["timeline"] = [{"kernel": k, "start_us": round(s, 2), "end_us": round(e, 2)} for k, s, e in spans]
        with open(os.path.join(args.out, f"megakernel-ctx{args.context}.trace.json"), "w") as fh:
            json.dump(chrome_trace(rows), fh)
    with open(os.path.join(args.out, "residual_ab.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
