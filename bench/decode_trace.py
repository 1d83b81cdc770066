"""Where a decode-attention layer's time goes, from inside the kernel: flash-decoding's knob `trace`
(codegen/cuda_flash_decode.py TRACE_POINTS) has thread 0 of every block stamp %globaltimer at its
start, after the grid-dependency wait, when q is in shared memory, when its keys are done, after
the block's and the cluster's combines, and at its end. N layers in one graph replay (as
bench/attention.py --decode-layers times them); per layer the phases' medians over its blocks, the
kernel's span (first start to last end) and the gap to the next layer's first wait.

    python bench/decode_trace.py --out bench/results/decode-trace-DATE.json [--cases "1,8,4,8192,128;..."]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def read_workspace(prog, index: int, nbytes: int) -> np.ndarray:
    from cuda.bindings import driver
    buf = prog.executor._workspace[index]
    host = np.zeros(nbytes // 8, np.uint64)
    err, = driver.cuMemcpyDtoH(host.ctypes.data, int(buf.handle), host.nbytes)
    assert int(err) == 0, err
    return host


def trace_case(N, B, Hkv, G, S, D, reps: int = 5, extra: dict | None = None) -> dict:
    import torch
    from attention import decode_layer_inputs, ember_decode_layers
    from ember import symbolic as sm
    from ember.codegen.cuda_flash_decode import TRACE_POINTS
    qs, ks, vs, feed = decode_layer_inputs(N, B, Hkv, G, S, D)
    base = ember_decode_layers(N, B, Hkv, G, S, D)
    cfg = {k: v for k, v in base.launches[0].config["cfg"].items() if k not in ("pdl_late", "early_keys")}  # (the program pass's)
    cfg = dict(cfg, trace=1, **(extra or {}))
    prog = ember_decode_layers(N, B, Hkv, G, S, D, cfg)
    for _ in range(reps):
        prog(**feed)
    torch.cuda.synchronize()
    K = len(TRACE_POINTS)
    layers = []
    for i, l in enumerate(prog.launches):
        if (l.config.get("cfg") or {}).get("mode") != "decode":
            continue
        ws = int(l.config["workspace"])
        raw = read_workspace(prog, i, ws)
        grid = int(sm.evaluate(sm.from_json(l.config["grid"]), {}))
        t = raw[-grid * K:].reshape(-1, K).astype(np.int64)  # (the trace is the workspace's tail)
        t = t[t[:, 0] > 0]
        layers.append(t)
    t00 = min(int(t[:, 0].min()) for t in layers)
    rows = []
    for j, t in enumerate(layers):
        ph = {f"{TRACE_POINTS[a]}->{TRACE_POINTS[a + 1]}_us": round(float(np.median(t[:, a + 1] - t[:, a])) / 1e3, 3)
              for a in range(K - 1)}
        row = dict(layer=j, blocks=len(t), start_us=round((int(t[:, 0].min()) - t00) / 1e3, 2),
                   waited_us=round((int(t[:, 1].min()) - t00) / 1e3, 2), end_us=round((int(t[:, K - 1].max()) - t00) / 1e3, 2),
                   span_us=round((int(t[:, K - 1].max()) - int(t[:, 0].min())) / 1e3, 2),
                   after_wait_us=round((int(t[:, K - 1].max()) - int(t[:, 1].min())) / 1e3, 2), **ph)
        rows.append(row)
    for a, b in zip(rows, rows[1:]):
        a["next_waited_after_end_us"] = round(b["waited_us"] - a["end_us"], 2)
    return dict(B=B, Hkv=Hkv, G=G, S=S, D=D, layers=N, cfg=cfg, rows=rows)


def main():
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--cases", default="1,8,4,8192,128;1,8,4,32768,128;1,8,4,8192,64")
    ap.add_argument("--extra", default="[{}]", help="JSON list of knob sets traced on top of the default schedule")
    a = ap.parse_args()
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cases": []}
    for c in a.cases.split(";"):
        B, Hkv, G, S, D = (int(x) for x in c.split(","))
        for extra in json.loads(a.extra):
            r = trace_case(a.layers, B, Hkv, G, S, D, extra=extra)
            mid = r["rows"][len(r["rows"]) // 2]
            print(json.dumps({k: v for k, v in r.items() if k != "rows"}), json.dumps(mid), flush=True)
            out["cases"].append(r)
            torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
