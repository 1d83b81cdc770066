"""Real models on the GPU through `em.from_torch` (issue 19's real-model targets): ResNet-50 (the
published Bottleneck layout, plain torch) at batch 32 x 3 x 224 x 224, a Hugging Face BertModel
built from bert-base-uncased's config at batch 32 x 128 tokens, and a Llama-3.2-1B-shaped
LlamaForCausalLM prefill of 512 tokens (random weights, no hub downloads), in bf16 and float32,
against PyTorch eager and torch.compile in the same process, in interleaved rounds (eager, Ember,
torch.compile, repeated `--rounds` times; each side's best round: this machine's timings drift by
up to 2x between minutes, bench/results/gpu-session22-2026-11-26/). Ember and torch are timed as CUDA
graph replays where torch's can be captured (eager models), with CUDA events otherwise; errors are
relative to the largest output of a float32 eager run.

    python bench/gpu_models.py --out bench/results/gpu-models-DATE.json [--only resnet,bert] [--dtypes bf16,f32]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])


def resnet50():
    import torch
    import torch.nn as nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, mid, stride):
            super().__init__()
            cout = mid * 4
            self.c1, self.b1 = nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid)
            self.c2, self.b2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid)
            self.c3, self.b3 = nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = torch.relu(self.b2(self.c2(y)))
            y = self.b3(self.c3(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], 64
            for mid, n, st in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
                for i in range(n):
                    blocks.append(Bottleneck(cin, mid, st if i == 0 else 1))
                    cin = mid * 4
            self.layers = nn.Sequential(*blocks)
            self.fc = nn.Linear(2048, 1000)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return ResNet50().eval(), lambda dt: (torch.randn(32, 3, 224, 224, device="cuda").to(dt),), 2 * 4.1e9 * 32


def bert_base():
    import torch
    import transformers
    cfg = transformers.BertConfig(attn_implementation="eager")  # bert-base-uncased's shape
    model = transformers.BertModel(cfg).eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids, mask):
            return self.m(input_ids=ids, attention_mask=mask).last_hidden_state
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (32, 128), generator=g).cuda()
    mask = torch.ones(32, 128, dtype=torch.long, device="cuda")
    return LastHidden(model).eval(), lambda dt: (ids, mask), 2 * 110e6 * 32 * 128


def llama_prefill():
    import torch
    import transformers
    cfg = transformers.LlamaConfig(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                                   head_dim=64, intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True,
                                   rms_norm_eps=1e-5, max_position_embeddings=2048, rope_theta=500000.0,
                                   attn_implementation="eager")
    model = transformers.LlamaForCausalLM(cfg).eval()

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids):
            return self.m(input_ids=ids, use_cache=False).logits
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (1, 512), generator=g).cuda()
    return Logits(model).eval(), lambda dt: (ids,), 2 * 1.24e9 * 512


ROUNDS = 3  # interleaved timing rounds per model (--rounds)
MODELS = {"resnet50 b32": resnet50, "bert-base b32x128": bert_base, "llama-1b prefill 512": llama_prefill}


def timed(fn, reps: int = 10) -> float:
    import torch
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(3):
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) / reps)
    return min(out)


def run(name: str, make, dtype: str, with_compile: bool) -> dict:
    import torch

    import ember as em
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    model, inputs, flops = make()
    model = model.cuda().to(dt) if dtype == "bf16" else model.cuda()
    ins = inputs(dt)
    row = {"case": name, "dtype": dtype}
    with torch.no_grad():
        ref32 = None
        if dtype == "bf16":  # the float32 model's output as the reference
            m32, _, _ = make()
            m32.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
            ref32 = m32.cuda()(*[x.float() if x.is_floating_point() else x for x in ins]).float()
            del m32
        eager_out = model(*ins).float()
        ref = ref32 if ref32 is not None else eager_out
        scale = ref.abs().max().item()
        row["eager_err"] = (eager_out - ref).abs().max().item() / scale
        t0 = time.time()
        fn = em.from_torch(model, ins, device="cuda", precision="torch")  # (PyTorch's own TF32 policy, as eager)
        row["ember_compile_s"] = time.time() - t0
        out = fn(*ins).float()
        row["ember_err"] = (out - ref).abs().max().item() / scale
        row["ember_kernels"] = len(fn.program.launches)
        fns = {"eager": lambda: model(*ins), "ember": lambda: fn(*ins)}
        if with_compile:
            try:
                t0 = time.time()
                cm = torch.compile(model)
                cm(*ins)
                row["compile_s"] = time.time() - t0
                fns["torch_compile"] = lambda: cm(*ins)
            except Exception as e:  # noqa: BLE001 - reported, not fatal
                row["torch_compile_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        # interleaved rounds (the machine's timings drift between minutes): each side's best round
        rounds = {k: [] for k in fns}
        for _ in range(ROUNDS):
            for k, f in fns.items():
                rounds[k].append(timed(f))
        for k, ts in rounds.items():
            row[f"{k}_ms"] = min(ts)
            row[f"{k}_rounds_ms"] = [round(t, 4) for t in ts]
        row["vs_eager"] = row["eager_ms"] / row["ember_ms"]
        if "torch_compile_ms" in row:
            row["vs_torch_compile"] = row["torch_compile_ms"] / row["ember_ms"]
    row["ember_tflops"] = flops / row["ember_ms"] / 1e9
    print(json.dumps(row), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (eager, Ember, compile)")
    args = ap.parse_args()
    global ROUNDS
    ROUNDS = args.rounds
    import torch
    rows = []
    for name, make in MODELS.items():
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        for dtype in args.dtypes.split(","):
            try:
                rows.append(run(name, make, dtype, not args.no_torch_compile))
            except Exception as e:  # noqa: BLE001 - a model that fails is reported
                rows.append({"case": name, "dtype": dtype, "error": f"{type(e).__name__}: {str(e)[:400]}"})
                print(rows[-1], flush=True)
            torch.cuda.empty_cache()
            if args.out:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                           "date": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__" and "--profile" not in sys.argv:
    main()


def profile(name: str, dtype: str, top: int = 8, with_ir: int = 8) -> None:
    """The slowest `top` kernels of one model's Ember program (torch.profiler's CUDA times, one call),
    their configs, and the IR of the first `with_ir`."""
    import torch

    import ember as em
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    model, inputs, _ = MODELS[name]()
    model = model.cuda().to(dt) if dtype == "bf16" else model.cuda()
    ins = inputs(dt)
    with torch.no_grad():
        fn = em.from_torch(model, ins, device="cuda", precision="torch")
        fn(*ins)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            fn(*ins)
            torch.cuda.synchronize()
    ev = sorted(((e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total, e.key)
                 for e in prof.key_averages()), reverse=True)[:top]
    ir = fn.program.meta.get("kernels_ir", "").split("\nkernel ")
    cfg = {l.kernel: l.config for l in fn.program.launches}
    print(f"total {sum(t for t, _ in ev):.0f} us over the {len(ev)} slowest kernels", flush=True)
    for i, (t, k) in enumerate(ev):
        print(f"{t:10.0f} us  {k}  {json.dumps(cfg.get(k, {}).get('cfg', cfg.get(k)), default=str)[:300]}", flush=True)
        body = next((x for x in ir if x.split("(")[0].strip().split()[-1] == k), None)
        if body and i < with_ir:
            print("kernel " + body[:1500], flush=True)


if __name__ == "__main__" and "--profile" in sys.argv:  # python bench/gpu_models.py --profile NAME DTYPE
    i = sys.argv.index("--profile")
    profile(next(n for n in MODELS if sys.argv[i + 1] in n), sys.argv[i + 2],
            *(int(a) for a in sys.argv[i + 3:i + 5]))  # [TOP [WITH_IR]]
