"""Where a decode step's time goes *inside* its CUDA graph: kernel start/end timestamps from CUPTI
(torch.profiler's CUDA activity, process-wide: it sees the graph Ember replays), so the idle gaps
between kernels and each kernel's own duration are measured as they run, not one kernel at a time.

    python bench/decode_timeline.py --out bench/results/decode-timeline-DATE.json [--context 1024]

Writes the summary JSON (per kernel: duration; per step: busy time, gaps) and the Chrome trace
beside it (open in Perfetto)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--ckpt", default="/tmp/ember-llama1b")
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    import ember.llm as L
    from llm import LLAMA_1B, cuda_time, decode_feed, write_checkpoint
    if not os.path.exists(os.path.join(args.ckpt, "config.json")):
        write_checkpoint(args.ckpt, LLAMA_1B)
    llm = L.load(args.ckpt, device="cuda", max_seq_len=args.context + 64)
    prog = llm.program("decode", 1)
    P = args.context - 1
    feed = decode_feed(llm, 1, P)
    step_ms = cuda_time(lambda: prog.run(feed, dims={"P": P}), 50)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.steps):
            prog.run(feed, dims={"P": P})
        torch.cuda.synchronize()
    trace = os.path.splitext(args.out)[0] + ".trace.json"
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    ev.sort(key=lambda e: e["ts"])
    n = len(prog.launches)
    steps = [ev[i * n:(i + 1) * n] for i in range(len(ev) // n)]
    names = [l.kernel for l in prog.launches]
    per: dict = {}
    gaps_all, busy_all, span_all = [], [], []
    for st in steps[1:] or steps:  # (the first replay may carry node updates)
        busy = sum(e["dur"] for e in st)
        span = st[-1]["ts"] + st[-1]["dur"] - st[0]["ts"]
        gaps = [max(0.0, b["ts"] - (a["ts"] + a["dur"])) for a, b in zip(st, st[1:])]
        gaps_all.append(sum(gaps))
        busy_all.append(busy)
        span_all.append(span)
        for e, nm in zip(st, names):
            per.setdefault(nm, []).append(e["dur"])
    kern = [{"kernel": nm, "mode": l.config.get("mode"), "grid": l.config.get("grid"), "us": sorted(per[nm])[len(per[nm]) // 2],
             "bytes": l.stats.get("bytes") if isinstance(l.stats.get("bytes"), int) else None}
            for nm, l in zip(names, prog.launches) if nm in per]
    by_mode: dict = {}
    for k in kern:
        m = by_mode.setdefault(k["mode"], {"count": 0, "us": 0.0})
        m["count"] += 1
        m["us"] += k["us"]
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "context": args.context, "kernels": n, "events": len(ev), "step_ms_host_timed": step_ms,
           "span_us": span_all, "kernel_busy_us": busy_all, "gaps_us": gaps_all, "by_mode": by_mode,
           "slowest": sorted(kern, key=lambda k: -k["us"])[:12], "per_kernel": kern,
           "env": {k: os.environ.get(k) for k in ("EMBER_PDL", "EMBER_STREAM_PROLOGUES", "EMBER_L2_PREFETCH")}}
    # the host's share: LLM.generate under cProfile (the step ahead hides host work up to the GPU's)
    import cProfile
    import io
    import pstats
    prompt = list(range(1, 129))
    llm.generate([prompt], max_new_tokens=8, stop_token_ids=[])
    prof_h = cProfile.Profile()
    t0 = time.perf_counter()
    prof_h.enable()
    llm.generate([prompt], max_new_tokens=128, stop_token_ids=[])
    prof_h.disable()
    res["generate_ms_per_token"] = llm.last_stats["decode_s"] / max(llm.last_stats["decode_tokens"], 1) * 1e3
    res["generate_wall_s"] = time.perf_counter() - t0
    buf = io.StringIO()
    pstats.Stats(prof_h, stream=buf).sort_stats("tottime").print_stats(30)
    with open(os.path.splitext(args.out)[0] + ".host.txt", "w") as f:
        f.write(buf.getvalue())
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps({k: res[k] for k in ("device", "kernels", "events", "step_ms_host_timed", "span_us", "kernel_busy_us",
                                          "gaps_us", "by_mode", "generate_ms_per_token")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
