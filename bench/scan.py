"""cumsum on the GPU: Ember's scan kernels (kernel/scan.py, codegen/cuda_scan.py) under several scan
configs (threads x unroll) and the old masked-loop form, against torch eager, torch.compile and
torch under a CUDA graph, as graph replays; bandwidth counts one read of the input and one write
of the output. Each variant's output is checked against float64.

    python bench/scan.py --out bench/results/scan-DATE.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from contractions import graph_timed  # noqa: E402

CASES = [("cumsum 4096x8192 (project KB 31)", (4096, 8192), "cumsum"),
         ("exclusive cumsum 32768x32768 (real KB 92)", (32768, 32768), "exclusive"),
         ("cumsum 32768x32768 (real KB 89)", (32768, 32768), "cumsum"),
         ("reverse cumsum 32768x32768 (real KB 91)", (32768, 32768), "reverse"),
         ("cumsum 64x4096", (64, 4096), "cumsum"),
         ("cumsum's gradient 4096x8192 (suffix sums)", (4096, 8192), "grad")]
# (scan kernels' config, the block totals' config): None keeps the default
CONFIGS = [(None, None), ({"mode": "scan", "threads": 256, "unroll": 4}, None), ({"mode": "scan", "threads": 128, "unroll": 8}, None),
           (None, {"mode": "scan", "threads": 256, "unroll": 4}), (None, {"mode": "scan", "threads": 512, "unroll": 8}),
           (None, {"mode": "warp", "threads": 512, "vec": 1}), (None, {"mode": "warp", "threads": 128, "vec": 8}),
           ("loops", None)]


def graph(x, kind):
    import ember as em
    from ember.ops.movement import flip
    if kind == "grad":  # d/dv sum(cumsum(v) * x): the suffix sums of x (kernel/scan.py `suffix`)
        v = em.input("v", x.node.shape, "float32")
        return em.grad((v.cumsum(1) * x).sum(), [v])[0]
    if kind == "exclusive":  # the real KernelBench's: the scan of x[:, :-1] after a column of zeros
        return em.concat([x[:, :1] * 0, x[:, :-1].cumsum(1)], 1)
    return flip(flip(x, [1]).cumsum(1), [1]) if kind == "reverse" else x.cumsum(1)


def program(y, cfg, totals=None):
    from ember import pipeline
    from ember.codegen import cuda as cg
    target = pipeline.get_target("cuda")
    lowered = pipeline.lower([y.node], None, target)
    from ember.kernel.scan import scan_form
    cfgs = []
    for k, _ in lowered.kernels:
        d = cg.default_config(k, target)
        if scan_form(cg.canonical(k)) is not None:  # a masked sum (the scans)
            if cfg is not None:
                # "loops": the warp loops the masked sums took before the scan mode
                d = {"mode": "warp", "threads": 256, "vec": 8} if cfg == "loops" else dict(cfg)
        elif totals is not None and d.get("mode") in ("warp", "thread", "block", "scan"):
            d = dict(totals)  # the block totals (plain short sums)
        cfgs.append(d)
    return pipeline.build_program(lowered, target, None, "single", configs=cfgs), cfgs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--cases", default=None, help="comma-separated case indices")
    a = ap.parse_args()
    import torch
    import ember as em
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
           "rows": []}
    todo = [CASES[int(i)] for i in a.cases.split(",")] if a.cases else CASES
    for name, shape, kind in todo:
        x = torch.randn(shape, device="cuda")
        if kind in ("reverse", "grad"):
            tfn = lambda: torch.cumsum(x.flip(1), 1).flip(1)  # noqa: E731
        elif kind == "exclusive":
            tfn = lambda: torch.cat([torch.zeros_like(x[:, :1]), torch.cumsum(x[:, :-1], 1)], 1)  # noqa: E731
        else:
            tfn = lambda: torch.cumsum(x, 1)  # noqa: E731
        ref = tfn().double() if shape[0] * shape[1] <= 1 << 27 else None
        if ref is None:  # the 4 GB cases: checked in float64 on the first 256 rows
            xd = x[:256].double()
            ref = (torch.cumsum(xd.flip(1), 1).flip(1) if kind in ("reverse", "grad") else
                   torch.cat([torch.zeros_like(xd[:, :1]), torch.cumsum(xd[:, :-1], 1)], 1) if kind == "exclusive" else
                   torch.cumsum(xd, 1))
        nbytes = 2 * x.numel() * 4
        eager = graph_timed(tfn)
        comp = torch.compile(tfn)
        comp()
        compiled = graph_timed(comp)
        row = {"case": name, "shape": list(shape), "eager_graph_us": eager, "compile_graph_us": compiled,
               "eager_TBps": nbytes / eager / 1e6, "variants": []}
        y = graph(em.input("x", shape, "float32"), kind)
        for cfg, totals in CONFIGS:
            label = "default" if cfg is None and totals is None else f"scan {json.dumps(cfg)} totals {json.dumps(totals)}"
            try:
                prog, cfgs = program(y, cfg, totals)
                out = prog(x=x)
                err = float((out[:ref.shape[0]].double() - ref).abs().max() / ref.abs().max())
                us = prog.benchmark(reps=7, x=x)
                per_kernel = [round(t, 1) for t in prog.profile(reps=5, x=x)]
            except Exception as e:  # noqa: BLE001 - a variant that fails is reported
                row["variants"].append({"label": label, "error": f"{type(e).__name__}: {str(e)[:300]}"})
                print(label, "ERROR", str(e)[:300], flush=True)
                continue
            v = {"label": label, "us": us, "TBps": nbytes / us / 1e6, "rel_err": err, "ok": err < 1e-5,
                 "kernels": len(prog.launches), "modes": [c.get("mode") for c in cfgs], "per_kernel_us": per_kernel,
                 "vs_eager": eager / us, "vs_compile": compiled / us}
            row["variants"].append(v)
        print(json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items() if k != "variants"}), flush=True)
        for v in row["variants"]:
            if "us" in v:
                print(f"   {v['us']:9.1f} us {v['TBps']:.2f} TB/s x{v['vs_eager']:.2f} eager x{v['vs_compile']:.2f} compile "
                      f"err {v['rel_err']:.1e} {v['modes']} {v['per_kernel_us']} {v['label']}", flush=True)
        res["rows"].append(row)
        x = None  # (the 4 GB cases: freed before the next)
        torch.cuda.empty_cache()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
