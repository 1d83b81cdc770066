"""Which problems of a KernelBench directory Ember imports (every ATen op mapped to its primitives):
torch.export of each model built on the meta device and given uninitialised CPU memory (the
problems' multi-GB tensors cost no time), then Ember's import of the exported graph; nothing is
compiled or run. A quick CPU-side coverage check before
device time is spent on a level.

    python bench/kb_imports.py third_party/KernelBench [--level 1] [--out F.json]
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import re
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _load(path: str):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def one(path: str) -> dict:
    import torch
    from ember.frontends.function import export, import_graph
    mod = _load(path)
    try:
        with torch.device("meta"):  # (built without initialising multi-GB weights and inputs ...)
            model = mod.Model(*mod.get_init_inputs())
            ins = mod.get_inputs()
        # ... then given uninitialised CPU memory (untouched pages cost nothing): the importer reads
        # the weights' values as constants, and nothing here looks at them
        model = model.to_empty(device="cpu")
        ins = [torch.empty_like(x, device="cpu") if isinstance(x, torch.Tensor) else x for x in ins]
    except RuntimeError:  # a model that reads values while it is built (Swin's .item()): built for real
        model = mod.Model(*mod.get_init_inputs())
        ins = mod.get_inputs()
    with torch.no_grad():
        ep = export(model, tuple(ins), {})
    ops = sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})
    try:
        import_graph(ep, precision="torch")
    except Exception as e:  # noqa: BLE001 - the reason is the report
        return {"status": "unsupported", "error": f"{type(e).__name__}: {str(e)[:300]}", "ops": ops}
    return {"status": "imported", "ops": ops}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--level", type=int, default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.path, f"level{a.level or '*'}", "*.py")),
                   key=lambda p: (p.split("/")[-2], int(re.match(r"\d+", os.path.basename(p)).group())))
    rows = []
    for p in files:
        t0 = time.time()
        try:
            r = one(p)
        except Exception as e:  # noqa: BLE001 - a problem torch itself cannot export or build on meta
            r = {"status": "export failed", "error": f"{type(e).__name__}: {str(e)[:300]}",
                 "where": traceback.format_exc().strip().splitlines()[-3:]}
        r.update(problem=f"{p.split('/')[-2]}/{os.path.basename(p)}", s=round(time.time() - t0, 2))
        rows.append(r)
        print(f"{r['problem']:60s} {r['status']:14s} {r.get('error', '')[:110]}", flush=True)
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(counts)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "counts": counts, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
