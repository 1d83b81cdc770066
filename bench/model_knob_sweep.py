"""One model (bench/gpu_models.py's MODELS) compiled under each overlay of the tensor-core kernels' knobs
(bench/knob_sweep.py's mechanism: laid over every `wgmma` kernel's default unless the overlay names
another mode in "_on"), every launch timed alone
(Program.profile), side by side: which knob each kernel of a real model wants, in its own layout (a conv
timed alone from an NCHW module is not the conv the model runs). Not a test.

    python bench/model_knob_sweep.py --model "resnet50 b32" --knobs '[{"epair": true}, {"BM": 64, "BN": 128}]' --out F
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import gpu_models  # noqa: E402
from conv_sweep import variant  # noqa: E402
from run import time_torch, versions  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50 b32", choices=list(gpu_models.MODELS))
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("--knobs", default="[]")
    ap.add_argument("--top", type=int, default=25, help="kernels printed (the slowest under the default)")
    ap.add_argument("--out")
    a = ap.parse_args()
    import ember as em
    overlays = [None] + json.loads(a.knobs)
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
    model, inputs, _ = gpu_models.MODELS[a.model]()
    model = model.cuda().to(dt) if a.dtype == "bf16" else model.cuda()
    ins = inputs(dt)
    with torch.no_grad():
        ref = model(*ins).float()
    runs = []
    for ov in overlays:
        def body():
            with torch.no_grad():
                fn = em.from_torch(model, ins, device="cuda", precision="torch")
                err = float((fn(*ins).float() - ref).abs().max() / ref.abs().max())
                feed, _ = fn._feed(ins, {})
                times = fn.program.profile(reps=20, **feed)
                ms = time_torch(lambda: fn(*ins), "cuda") / 1e3
            return {"ms": ms, "rel_err": err, "kernels": {l.kernel: round(t, 2) for l, t in zip(fn.program.launches, times)}}
        rec = dict(variant(ov, body), overlay=ov)  # (conv_sweep.variant: on the wgmma kernels unless "_on" says)
        runs.append(rec)
        print(f"{json.dumps(ov)[:70]:70s} " + (f"{rec['ms']:.3f} ms err {rec['rel_err']:.1e}" if "ms" in rec else rec["error"]), flush=True)
    base = runs[0].get("kernels", {})
    ok = [r for r in runs if "kernels" in r]
    best = {k: min(r["kernels"].get(k, float("inf")) for r in ok) for k in base}
    print(f"sum of launches: default {sum(base.values()):.1f} us, each kernel's best overlay {sum(best.values()):.1f} us")
    print("kernel        " + " ".join(f"{i:>7d}" for i in range(len(ok))))
    for k in sorted(base, key=lambda k: -base[k])[:a.top]:
        print(f"{k:13s} " + " ".join(f"{r['kernels'].get(k, float('nan')):7.1f}" for r in ok))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "date": str(datetime.datetime.now()), "model": a.model,
                       "versions": versions("cuda"), "runs": runs}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
