"""The `x @ W` GEMV (W stored [K, N]: one output per lane, `cols` mode) under split-K policies and
column-mapping knobs, against cuBLAS, as graph replays (issue 19: >= 2.7 TB/s on 2048 x 8192 and
8192 x 2048). Each variant is a SplitPolicy for the graph-level split (kernel/split.py: how many k
chunks, chunk index outermost) times a `cols` config for the kernels the default maps to `cols`;
the nn.Linear layout is timed beside it as the reference.

    python bench/gemv_sweep.py --out bench/results/gemv-sweep-DATE.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from contractions import build, graph_timed  # noqa: E402

CASES = [("x@W 2048x8192", (1, 8192, 2048), "nn"), ("x@W 8192x2048", (1, 2048, 8192), "nn"),
         ("Linear 2048x8192", (1, 8192, 2048), "nt"), ("Linear 8192x2048", (1, 2048, 8192), "nt")]


def variants():
    from ember.kernel.split import SplitPolicy
    base = SplitPolicy()
    yield "default", None, None
    for chunk in (128, 256, 512):
        for wanted in (512, 1024, 2048):
            pol = dataclasses.replace(base, gemv_k_min=1024, gemv_chunk_min=chunk, tiles_wanted=wanted, tiles_few=1 << 20)
            for cfg in (None, {"mode": "cols", "threads": 256, "cvec": 4}, {"mode": "cols", "threads": 128, "cvec": 8},
                        {"mode": "cols", "threads": 256, "cvec": 8}, {"mode": "cols", "threads": 128, "cvec": 4}):
                yield f"chunk>={chunk} wanted {wanted} {json.dumps(cfg)}", pol, cfg


def program(y, policy, cfg):
    from ember import pipeline
    from ember.codegen import cuda as cg
    target = pipeline.get_target("cuda")
    if policy is not None:
        target = dataclasses.replace(target, split=policy)
    lowered = pipeline.lower([y.node], None, target)
    cfgs = []
    for k, _ in lowered.kernels:
        d = cg.default_config(k, target)
        if cfg is not None and d.get("mode") in ("cols", "thread") and cg.contraction_of(cg.canonical(k)) is not None:
            d = dict(cfg)
        cfgs.append(d)
    return pipeline.build_program(lowered, target, None, "single", configs=cfgs), cfgs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import torch
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
           "rows": []}
    for name, shape, layout in CASES:
        y, ins, ref_fn, _ = build(shape, layout, "bfloat16")
        ref = ref_fn().float()
        nbytes = sum(t.numel() * t.element_size() for t in ins.values()) + ref.numel() * 2
        cub = graph_timed(ref_fn)
        row = {"case": name, "cublas_us": cub, "cublas_TBps": nbytes / cub / 1e6, "variants": []}
        for label, pol, cfg in (variants() if layout == "nn" else [("default", None, None)]):
            try:
                prog, cfgs = program(y, pol, cfg)
                out = prog(**ins).float()
                err = float((out - ref).abs().max() / ref.abs().max())
                us = prog.benchmark(reps=7, **ins)
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported
                row["variants"].append({"label": label, "error": f"{type(e).__name__}: {str(e)[:200]}"})
                continue
            v = {"label": label, "us": us, "TBps": nbytes / us / 1e6, "err": err, "ok": err < 2e-2,
                 "kernels": len(prog.launches), "configs": cfgs}
            row["variants"].append(v)
        best = max((v for v in row["variants"] if v.get("ok")), key=lambda v: v["TBps"], default=None)
        row["best"] = best and {k: best[k] for k in ("label", "TBps", "us", "kernels")}
        dflt = next(v for v in row["variants"] if v["label"] == "default")
        print(json.dumps({"case": name, "cublas_TBps": round(row["cublas_TBps"], 2),
                          "default_TBps": round(dflt.get("TBps", 0), 2), "best": row["best"]}), flush=True)
        for v in sorted((v for v in row["variants"] if v.get("ok")), key=lambda v: -v["TBps"])[:6]:
            print(f"   {v['TBps']:.2f} TB/s  {v['kernels']} kernels  {v['label']}", flush=True)
        res["rows"].append(row)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
