"""Per-kernel device time of one model (bench/gpu_models.py's MODELS) under Ember and torch.compile,
side by side, from one profiler (torch.profiler's CUPTI activity trace sees every kernel the process
launches, Ember's driver launches included). Not a test: the breakdown that says where a model's gap
to torch.compile lies.

    python3 bench/model_kernel_profile.py --model "resnet50 b32" --dtype bf16 --top 30 --out prof.json
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import gpu_models  # noqa: E402


def kernel_times(fn, calls: int) -> dict:
    """Device microseconds per call by kernel name (summed over launches of one name)."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    out = collections.defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type.name == "CUDA" and e.device_time_total > 0 and "memcpy" not in e.name.lower() and "memset" not in e.name.lower():
            out[e.name][0] += e.device_time_total / calls
            out[e.name][1] += 1
    if not out:
        print("warning: the profiler saw no kernels")
    return {k: (round(v[0], 1), max(1, v[1] // calls)) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50 b32", choices=list(gpu_models.MODELS))
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import ember as em
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
    model, inputs, _ = gpu_models.MODELS[a.model]()
    model = model.cuda().to(dt) if a.dtype == "bf16" else model.cuda()
    ins = inputs(dt)
    res = {"model": a.model, "dtype": a.dtype}
    with torch.no_grad():
        fn = em.from_torch(model, ins, device="cuda", precision="torch")
        launches = {l.kernel: {"config": {k: v for k, v in l.config.items() if k not in ("grid", "block")}}
                    for l in fn.program.launches}
        feed, _ = fn._feed(ins, {})  # Ember's own per-launch timing (the trace names every kernel alike)
        times = fn.program.profile(reps=20, **feed)
        rows = []
        for l, us in zip(fn.program.launches, times):
            try:
                fl, by = (int(float(l.stats[k])) if not isinstance(l.stats[k], (dict, list)) else 0 for k in ("flops", "bytes"))
            except (KeyError, TypeError, ValueError):
                fl = by = 0
            rows.append([l.kernel, round(us, 1), fl, by])
        res["ember_launches"] = rows
        print(f"== ember per launch: {sum(r[1] for r in rows):.1f} us")
        for k, us, fl, by in sorted(rows, key=lambda r: -r[1])[:a.top]:
            print(f"  {us:8.1f} us  {k[:60]:60s} {fl / us / 1e6 if us else 0:7.1f} TFLOP/s {by / us / 1e3 if us else 0:7.1f} GB/s")
        cm = torch.compile(model)
        for name, f in (("ember", lambda: fn(*ins)), ("torch_compile", lambda: cm(*ins))):
            t = kernel_times(f, a.calls)
            res[name] = {"total_us": round(sum(v[0] for v in t.values()), 1),
                         "kernels": sorted(([k, *v] for k, v in t.items()), key=lambda r: -r[1])}
            print(f"== {name}: {res[name]['total_us']} us of kernels per call, {sum(v[1] for v in t.values())} launches")
            for k, us, n in res[name]["kernels"][:a.top]:
                cfg = launches.get(k, {}).get("config", "")
                print(f"  {us:8.1f} us  x{n}  {k[:90]}  {json.dumps(cfg)[:160] if cfg else ''}")
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
