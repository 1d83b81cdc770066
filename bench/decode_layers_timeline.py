"""Decode attention as 16 layers in one graph replay (bench/attention.py --decode-layers), seen from
inside the replay: each kernel's start and end from CUPTI (torch.profiler's CUDA activity), so a
kernel's own duration, the gaps between kernels and their overlap (programmatic dependent launch)
are measured as they run. Ember's program and torch's SDPA under a CUDA graph, same inputs.

    python bench/decode_layers_timeline.py --out bench/results/decode-layers-timeline-DATE.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _events(fn, reps: int, out_trace: str) -> list:
    import torch
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(out_trace)
    with open(out_trace) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    ev.sort(key=lambda e: e["ts"])
    return ev


def _summary(ev: list, per_replay: int, nbytes: int, bw: float) -> dict:
    reps = [ev[i * per_replay:(i + 1) * per_replay] for i in range(len(ev) // per_replay)][1:]
    durs = sorted(e["dur"] for r in reps for e in r)
    gaps = [b["ts"] - (a["ts"] + a["dur"]) for r in reps for a, b in zip(r, r[1:])]  # (negative: overlap)
    spans = sorted(r[-1]["ts"] + r[-1]["dur"] - r[0]["ts"] for r in reps)
    med = durs[len(durs) // 2]
    return {"kernels_per_replay": per_replay, "kernel_us_median": med, "kernel_us_min": durs[0],
            "kernel_pct_copy_bw": round(100 * nbytes / (med * 1e-6) / bw, 1),
            "gap_us_median": sorted(gaps)[len(gaps) // 2] if gaps else None,
            "span_us_median": spans[len(spans) // 2], "per_layer_us": spans[len(spans) // 2] / per_replay,
            "per_layer_pct_copy_bw": round(100 * nbytes / (spans[len(spans) // 2] / per_replay * 1e-6) / bw, 1)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=16)
    args = ap.parse_args()
    import torch
    from attention import copy_bandwidth, decode_layer_inputs, ember_decode_layers
    F = torch.nn.functional
    N = args.layers
    bw = copy_bandwidth()
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "copy_GBps": round(bw / 1e9, 1), "rows": []}
    base = os.path.splitext(args.out)[0]
    for B, Hkv, G, S, D in [(1, 8, 4, 8192, 128), (1, 8, 4, 32768, 128)]:
        qs, ks, vs, feed = decode_layer_inputs(N, B, Hkv, G, S, D)
        nbytes = 2 * ks[0].numel() * 2
        prog = ember_decode_layers(N, B, Hkv, G, S, D)
        prog(**feed)
        row = {"B": B, "Hkv": Hkv, "G": G, "S": S, "D": D, "cfg": prog.launches[0].config.get("cfg")}
        row["ember"] = _summary(_events(lambda p=prog, f=feed: p(**f), 6, f"{base}-ember-{S}.trace.json"), len(prog.launches),
                                nbytes, bw)
        qh = [q.reshape(B, Hkv * G, 1, D) for q in qs]
        g = torch.cuda.CUDAGraph()
        st = torch.cuda.Stream()
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            for _ in range(2):
                [F.scaled_dot_product_attention(qh[i], ks[i], vs[i], enable_gqa=True) for i in range(N)]
        torch.cuda.current_stream().wait_stream(st)
        with torch.cuda.graph(g):
            [F.scaled_dot_product_attention(qh[i], ks[i], vs[i], enable_gqa=True) for i in range(N)]
        ev = _events(g.replay, 6, f"{base}-sdpa-{S}.trace.json")
        row["sdpa"] = _summary(ev, len(ev) // 6, nbytes, bw)
        print(json.dumps(row), flush=True)
        res["rows"].append(row)
        qs = ks = vs = feed = prog = qh = g = None
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
