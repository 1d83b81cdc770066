"""Real models on the CPU (issue 24): Ember (`em.from_torch(..., device="cpu")`) against PyTorch
eager on the same machine, same process, random weights, eval mode, median of several calls after
a warm-up. The models are built in plain torch with the published architectures' layouts:

* ResNet-18 (torchvision's BasicBlock layout), batch 1 x 3 x 224 x 224;
* a BERT-style encoder with MiniLM-L6's shape (6 layers, hidden 384, 12 heads, FFN 1536), batch
  4 x 32 tokens (no transformers package needed), and, where transformers is installed, the
  Hugging Face BertModel built from all-MiniLM-L6-v2's config (random weights) on token ids;
* the MLP 784-512-10 at batch 64.

    python bench/cpu_models.py --out bench/results/cpu-models-DATE.json
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

from cpu_gemm import _cpu_model  # noqa: E402  (the CPU's model name, as the GEMM benchmark records it)


def resnet18():
    import torch.nn as nn
    import torch

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], 64
            for cout, st in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)]:
                blocks.append(Basic(cin, cout, st))
                cin = cout
            self.layers = nn.Sequential(*blocks)
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return ResNet18().eval(), (torch.randn(1, 3, 224, 224),)


def minilm_shaped():
    import torch
    import torch.nn as nn
    layer = nn.TransformerEncoderLayer(384, 12, 1536, dropout=0.0, activation="gelu", batch_first=True, norm_first=False)
    enc = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False).eval()
    return enc, (torch.randn(4, 32, 384),)


def hf_minilm():
    """all-MiniLM-L6-v2's BertModel built from its config (random weights: no hub download here),
    token ids and attention mask as a user passes them; None without the transformers package."""
    try:
        import transformers
    except ImportError:
        return None
    import torch
    cfg = transformers.BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                                  intermediate_size=1536, max_position_embeddings=512, attn_implementation="eager")
    model = transformers.BertModel(cfg).eval()
    ids = torch.randint(0, 30522, (4, 32))
    mask = torch.ones(4, 32, dtype=torch.long)

    class LastHidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids, mask):
            return self.m(input_ids=ids, attention_mask=mask).last_hidden_state
    return LastHidden(model).eval(), (ids, mask)


def mlp():
    import torch
    import torch.nn as nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).eval(), (torch.randn(64, 784),)


def gemvs(reps: int = 30) -> list:
    """Decode-shaped matrix-vector products (nn.Linear at batch 1) in float32 and bfloat16 weights:
    time and the weight bytes streamed per second, Ember against eager."""
    import torch

    import ember as em
    rows = []
    for name in ("float32", "bfloat16"):
        for k, n in ((2048, 8192), (8192, 2048)):
            torch.manual_seed(0)
            lin = torch.nn.Linear(k, n, bias=False).to(getattr(torch, name)).eval()
            x = torch.randn(1, k).to(getattr(torch, name))
            fn = em.from_torch(lin, (x,), device="cpu")
            with torch.no_grad():
                ref = lin(x).float()
                err = ((fn(x).float() - ref).abs().max() / ref.abs().max()).item()
                te, tb = timed(lambda: lin(x), reps), timed(lambda: fn(x), reps)
            nbytes = lin.weight.numel() * lin.weight.element_size()
            row = {"case": f"linear {k}->{n} batch 1 {name}", "eager_ms": te, "ember_ms": tb, "speedup": te / tb,
                   "ember_GBps": nbytes / tb / 1e6, "eager_GBps": nbytes / te / 1e6, "rel_err": err}
            rows.append(row)
            print(f"{row['case']:34s} eager {te * 1e3:7.0f} us  ember {tb * 1e3:7.0f} us  {te / tb:5.2f}x  "
                  f"({row['ember_GBps']:.1f} vs {row['eager_GBps']:.1f} GB/s of weights)", flush=True)
    return rows


def timed(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved eager/Ember blocks; the min of their medians")
    args = ap.parse_args()
    import torch
    rows = measure(args.reps, args.rounds) + gemvs()
    doc = {"machine": platform.processor() or platform.machine(), "cpu": _cpu_model(), "threads": torch.get_num_threads(),
           "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)


def measure(reps: int = 15, rounds: int = 5) -> list:
    """One row per model: eager and Ember times (ms), their ratio, relative error, compile time."""
    import torch

    import ember as em
    rows = []
    for name, make in (("resnet18 1x3x224x224", resnet18), ("minilm-shaped encoder 4x32", minilm_shaped),
                       ("hf bert all-MiniLM-L6-v2 config 4x32", hf_minilm), ("mlp 784-512-10 b64", mlp)):
        torch.manual_seed(0)
        made = make()
        if made is None:
            print(f"{name:30s} skipped (transformers is not installed)", flush=True)
            continue
        model, ins = made
        t0 = time.time()
        fn = em.from_torch(model, ins, device="cpu")
        compile_s = time.time() - t0
        with torch.no_grad():
            ref = model(*ins)
            out = fn(*ins)
            err = ((out - ref).abs().max() / ref.abs().max()).item()
            eager, ember = [], []
            for _ in range(rounds):  # interleaved: the shared VM drifts by tens of percent
                eager.append(timed(lambda: model(*ins), reps))
                ember.append(timed(lambda: fn(*ins), reps))
        row = {"case": name, "eager_ms": min(eager), "ember_ms": min(ember), "speedup": min(eager) / min(ember),
               "rel_err": err, "compile_s": compile_s, "kernels": len(fn.program.launches)}
        rows.append(row)
        print(f"{name:30s} eager {row['eager_ms']:8.2f} ms  ember {row['ember_ms']:8.2f} ms  {row['speedup']:5.2f}x  "
              f"err {err:.1e}  ({row['kernels']} kernels, compiled in {compile_s:.0f} s)", flush=True)
    return rows


if __name__ == "__main__":
    main()
