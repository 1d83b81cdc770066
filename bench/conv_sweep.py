"""ResNet-50's convolutions one at a time (conv + folded BatchNorm + ReLU, bf16, batch 32, as the
model runs them), Ember's default schedule against overlays of the tensor-core kernels' knobs and of
the split pass's thresholds (bench/knob_sweep.py's mechanisms), and torch eager; then, optionally,
the whole ResNet-50 under each split overlay. Graph replays for Ember (the program's own
benchmark), CUDA events for torch. Not a test: how a conv schedule rule is chosen.

    python bench/conv_sweep.py --knobs '[{"BM": 64, "BN": 64}, {"_split": {"tiles_few": 600}}]' --model --out F
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ember as em  # noqa: E402
from ember.codegen import cuda as cg  # noqa: E402

from knob_sweep import DEFAULT, set_split_constants, with_overlay  # noqa: E402
from run import time_torch, versions  # noqa: E402

# (name, in channels, out channels, kernel, stride, spatial size of the input)
CONVS = [("stem 7x7 3>64", 3, 64, 7, 2, 224), ("l1 1x1 64>256", 64, 256, 1, 1, 56), ("l1 1x1 256>64", 256, 64, 1, 1, 56),
         ("l1 3x3 64", 64, 64, 3, 1, 56), ("l2 3x3 128", 128, 128, 3, 1, 28), ("l3 3x3 256", 256, 256, 3, 1, 14),
         ("l3 1x1 1024>256", 1024, 256, 1, 1, 14), ("l3 1x1 256>1024", 256, 1024, 1, 1, 14),
         ("l4 3x3 512", 512, 512, 3, 1, 7), ("l4 1x1 2048>512", 2048, 512, 1, 1, 7),
         # a bottleneck's last conv: BatchNorm, the block's input added back, ReLU (the residual read in the epilogue)
         ("l1 1x1 64>256 +res", 64, 256, 1, 1, 56), ("l2 1x1 128>512 +res", 128, 512, 1, 1, 28),
         ("l3 1x1 256>1024 +res", 256, 1024, 1, 1, 14), ("l4 1x1 512>2048 +res", 512, 2048, 1, 1, 7)]


class ConvResidual(torch.nn.Module):
    """relu(bn(conv(x)) + r): the bottleneck's last conv with its residual."""

    def __init__(self, cin, cout, k, stride):
        super().__init__()
        self.conv = torch.nn.Conv2d(cin, cout, k, stride, k // 2, bias=False)
        self.bn = torch.nn.BatchNorm2d(cout)

    def forward(self, x, r):
        return torch.relu(self.bn(self.conv(x)) + r)


def conv_block(cin, cout, k, stride, residual: bool = False):
    m = ConvResidual(cin, cout, k, stride) if residual else \
        torch.nn.Sequential(torch.nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU())
    bn = m.bn if residual else m[1]
    with torch.no_grad():
        bn.running_mean.normal_(0, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    return m.eval().cuda().to(torch.bfloat16)


def variant(overlay, body):
    """body() under `overlay`: knobs laid over the default config of every `wgmma` kernel (the mode
    ResNet-50's convs run in; "_on" names another: knob_sweep.with_overlay's own default is `mma`, which
    left the thirty-eighth session's first sweep of the residual convs unchanged) and split constants."""
    ov = dict(overlay or {})
    if ov and "_on" not in ov and any(k != "_split" for k in ov):
        ov["_on"] = "wgmma"
    restore = set_split_constants(ov.pop("_split", {}))
    cg.default_config = with_overlay(ov)
    try:
        return body()
    except Exception as e:  # noqa: BLE001 - an overlay a kernel cannot take is a result
        return {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    finally:
        cg.default_config = DEFAULT
        set_split_constants(restore)


def sweep_overlays(name, module, xs, ref, eager, flops, overlays, baseline: str, width: int) -> dict:
    """One module compiled and timed under each overlay (checked against `ref`), printed beside the
    torch `baseline` (eager_us, already timed): the row of a sweep's JSON."""
    row = {"case": name, "eager_us": eager, "eager_tflops": flops / eager / 1e6, "variants": []}
    for ov in overlays:
        def body():
            with torch.no_grad():
                fn = em.from_torch(module, xs, device="cuda", precision="torch")
                out = fn(*xs).float()
                err = float((out - ref).abs().max() / ref.abs().max())
                us = time_torch(lambda: fn(*xs), "cuda")
            return {"us": us, "rel_err": err, "ok": err < 2e-2, "tflops": flops / us / 1e6,
                    "configs": [(l.kernel, l.config.get("grid"), l.config.get("cfg")) for l in fn.program.launches]}
        rec = dict(variant(ov, body), overlay=ov)
        row["variants"].append(rec)
        t = f"{rec['us']:8.1f} us {rec['tflops']:6.1f} TFLOP/s {eager / rec['us']:.2f}x {baseline} ok={rec['ok']}" \
            if "us" in rec else rec["error"]
        print(f"{name:{width}s} {json.dumps(ov)[:70]:70s} {t}", flush=True)
    print(f"{name:{width}s} {'torch ' + baseline:70s} {eager:8.1f} us {flops / eager / 1e6:6.1f} TFLOP/s", flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--knobs", default="[]")
    ap.add_argument("--only", default=None)
    ap.add_argument("--model", action="store_true", help="the whole ResNet-50 under each overlay too")
    ap.add_argument("--model-only", action="store_true", help="only the whole ResNet-50")
    ap.add_argument("--out")
    a = ap.parse_args()
    overlays = [None] + json.loads(a.knobs)
    rows = []
    for name, cin, cout, k, s, hw in ([] if a.model_only else CONVS):
        if a.only and not any(o in name for o in a.only.split(",")):
            continue
        torch.manual_seed(0)
        model = conv_block(cin, cout, k, s, "+res" in name)
        xs = (torch.randn(32, cin, hw, hw, device="cuda", dtype=torch.bfloat16),)
        if "+res" in name:
            xs += (torch.randn(32, cout, hw // s, hw // s, device="cuda", dtype=torch.bfloat16),)
        with torch.no_grad():
            ref = model(*xs).float()
            eager = time_torch(lambda: model(*xs), "cuda")
        flops = 2 * 32 * cout * cin * k * k * (hw // s) ** 2
        row = sweep_overlays(name, model, xs, ref, eager, flops, overlays, "eager", 22)
        rows.append(row)
    models = []
    if a.model or a.model_only:
        from gpu_models import MODELS
        from gpu_models import run as run_model
        for ov in overlays:
            rec = variant(ov, lambda: run_model("resnet50 b32", MODELS["resnet50 b32"], "bf16", False))
            models.append({"overlay": ov, **rec})
            print(f"resnet50 bf16 {json.dumps(ov)[:60]:60s} ember {rec.get('ember_ms')} ms eager {rec.get('eager_ms')} ms "
                  f"{rec.get('vs_eager')} {rec.get('error', '')}", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "date": str(datetime.datetime.now()),
                       "versions": versions("cuda"), "rows": rows, "models": models}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
