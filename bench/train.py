"""Training-step benchmark: `python bench/train.py --device cuda|cpu [--search none|fast] [--only mlp]`.

Times one full training step (forward, backward, AdamW update) of two models — an MLP classifier and a
small Llama-style transformer LM (ember.nn.Transformer) — in one process on one device:

* ``ember_step``: a call of the compiled step (`em.compile_train`): the batch copied in, one program
  (one CUDA graph replay on the GPU), the new parameters and optimizer state kept for the next call,
  the loss copied out. What a training loop pays per step.
* ``ember_program``: the same program alone (`Program.benchmark`: inputs already in place; on the GPU
  a graph replay timed with events): the kernels' share of the step.
* ``torch_eager``: zero_grad, forward, cross-entropy, backward, AdamW (foreach) step.
* ``torch_compile``: the same with the module wrapped in torch.compile (the optimizer stays eager).
* ``torch_cudagraph`` (CUDA only): the whole eager step captured once as a CUDA graph (static input
  buffers, AdamW(capturable=True)) and replayed.

Before timing, both frameworks take the same first steps from the same weights on the same batches;
the losses must agree (a mismatch is reported in the JSON and the table, and the case is still timed
so the run is not lost, but marked). Each time is the median of repeated runs after warm-up. Results:
bench/results/train-<device>-<date>.json and a table on stdout.

On the CPU, ``--threads N`` sets both OpenMP (Ember's kernels) and torch to N threads; the default
leaves both at their defaults.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CONFIGS = {
    # (GPU size, CPU size): the CPU sizes keep a CPU run to about a minute
    "mlp": {"cuda": dict(sizes=[784, 1024, 1024, 10], batch=256),
            "cpu": dict(sizes=[256, 256, 256, 10], batch=64)},
    "transformer": {"cuda": dict(vocab=96, dim=256, layers=4, heads=8, seq=128, batch=16),
                    "cpu": dict(vocab=64, dim=64, layers=2, heads=4, seq=64, batch=8)},
    # issue 20's size: the char transformer at 6 layers, d 512, seq 256, batch 32
    "gpt6x512": {"cuda": dict(vocab=96, dim=512, layers=6, heads=8, seq=256, batch=32),
                 "cpu": dict(vocab=64, dim=128, layers=2, heads=4, seq=64, batch=8)},
}


def parse(argv=None):
    ap = argparse.ArgumentParser(description="Ember vs PyTorch training-step benchmark")
    ap.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--search", default="none", choices=["none", "fast", "full"])
    ap.add_argument("--only", default=None, help="run only cases whose name contains this")
    ap.add_argument("--reps", type=int, default=30, help="timed repetitions (median reported)")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for Ember (OpenMP) and torch")
    ap.add_argument("--no-torch-compile", action="store_true", help="skip torch.compile (slow to compile)")
    ap.add_argument("--check-steps", type=int, default=3, help="steps of the loss check against torch (a loss curve)")
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/train-<device>-<date>.json)")
    return ap.parse_args(argv)


ARGS = parse()
if ARGS.threads:  # before any OpenMP runtime starts
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

import ember as em  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from ember import nn, optim  # noqa: E402

if ARGS.threads:
    torch.set_num_threads(ARGS.threads)
torch.backends.cuda.matmul.allow_tf32 = False  # float32 on both sides (Ember does not use TF32)
torch.backends.cudnn.allow_tf32 = False


# ------------------------------------------------------------------------------------------------
# the same models in PyTorch (parameter names as Ember's, so state_dicts load both ways)

class TorchBlock(torch.nn.Module):
    def __init__(self, dim, heads, hidden, eps=1e-5):
        super().__init__()
        self.heads = heads
        self.input_layernorm = torch.nn.RMSNorm(dim, eps=eps)
        self.self_attn = torch.nn.Module()
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            setattr(self.self_attn, n, torch.nn.Linear(dim, dim, bias=False))
        self.post_attention_layernorm = torch.nn.RMSNorm(dim, eps=eps)
        self.mlp = torch.nn.Module()
        self.mlp.gate_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.mlp.up_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.mlp.down_proj = torch.nn.Linear(hidden, dim, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        hd = d // self.heads
        a = self.self_attn
        h = self.input_layernorm(x)
        q, k, v = [p(h).reshape(b, t, self.heads, hd).transpose(1, 2) for p in (a.q_proj, a.k_proj, a.v_proj)]

        def rope(z):
            return z * cos + torch.cat([-z[..., hd // 2:], z[..., :hd // 2]], -1) * sin

        o = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
        x = x + a.o_proj(o.transpose(1, 2).reshape(b, t, d))
        h = self.post_attention_layernorm(x)
        return x + self.mlp.down_proj(F.silu(self.mlp.gate_proj(h)) * self.mlp.up_proj(h))


class TorchLM(torch.nn.Module):
    def __init__(self, vocab, dim, layers, heads, hidden, seq):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, dim)
        self.layers = torch.nn.ModuleList(TorchBlock(dim, heads, hidden) for _ in range(layers))
        self.norm = torch.nn.RMSNorm(dim, eps=1e-5)
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False)
        hd = dim // heads
        inv = torch.exp(torch.arange(hd // 2, dtype=torch.float32) * (-2.0 * math.log(10000.0) / hd))
        ang = torch.arange(seq, dtype=torch.float32)[:, None] * inv[None]
        ang = torch.cat([ang, ang], -1)
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, ids):
        h = self.embed_tokens(ids)
        for layer in self.layers:
            h = layer(h, self.cos, self.sin)
        return self.lm_head(self.norm(h))


def _load(ember_model, tmodel, device):
    sd = {k: torch.tensor(np.asarray(v, np.float32)) for k, v in ember_model.state_dict().items()}
    tmodel.load_state_dict(sd, strict=True)
    return tmodel.to(device)


def build_mlp(cfg, rng):
    sizes, b = cfg["sizes"], cfg["batch"]
    model = nn.MLP(sizes, activation="relu", seed=0)
    layers = []
    for i, (a, c) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(torch.nn.Linear(a, c))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    tmodel = torch.nn.Sequential(*layers)

    def batch():
        return {"x": rng.standard_normal((b, sizes[0])).astype(np.float32),
                "y": rng.integers(0, sizes[-1], b).astype(np.int32)}

    def em_loss(m, bt):
        return em.cross_entropy(m(bt["x"]), bt["y"])

    def t_loss(tm, x, y):
        return F.cross_entropy(tm(x), y)
    flops = 6 * b * sum(a * c for a, c in zip(sizes[:-1], sizes[1:]))  # fwd 2, bwd 4 per MAC
    return model, tmodel, batch, em_loss, t_loss, flops


def build_transformer(cfg, rng):
    V, D, L, H, T, B = (cfg[k] for k in ("vocab", "dim", "layers", "heads", "seq", "batch"))
    hidden = nn.llama_hidden_dim(D)
    model = nn.Transformer(V, D, L, H, seed=0)
    tmodel = TorchLM(V, D, L, H, hidden, T)

    def batch():
        ids = rng.integers(0, V, (B, T + 1)).astype(np.int32)
        return {"x": ids[:, :-1], "y": ids[:, 1:]}

    def em_loss(m, bt):
        return em.cross_entropy(m(bt["x"]).reshape(B * T, V), bt["y"].reshape(B * T))

    def t_loss(tm, x, y):
        return F.cross_entropy(tm(x).reshape(-1, V), y.reshape(-1))
    n_mat = L * (4 * D * D + 3 * D * hidden) + D * V
    flops = 6 * B * T * n_mat + L * 6 * B * T * T * D  # weights, plus the attention products (causal ~ 1/2 x 2)
    return model, tmodel, batch, em_loss, t_loss, flops


BUILDERS = {"mlp": build_mlp, "transformer": build_transformer, "gpt6x512": build_transformer}


# ------------------------------------------------------------------------------------------------
# timing

def median_us(fn, reps: int, device: str, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e6)
    ts.sort()
    return ts[len(ts) // 2]


def to_dev(bt: dict, device: str) -> tuple:
    return (torch.tensor(bt["x"], dtype=torch.float32 if bt["x"].dtype.kind == "f" else torch.long, device=device),
            torch.tensor(bt["y"], dtype=torch.long, device=device))


def run_case(name: str, args) -> dict:
    dev = args.device
    cfg = CONFIGS[name][dev]
    rng = np.random.default_rng(0)
    model, tmodel, batch, em_loss, t_loss, flops = BUILDERS[name](cfg, rng)
    lr = 1e-3
    res = {"name": name, "config": cfg, "flops_per_step": flops, "params": int(sum(p.size for p in model.parameters()))}

    t0 = time.perf_counter()
    first = batch()
    step = em.compile_train(model, em_loss, optim.AdamW(lr=lr, weight_decay=0.01), first, device=dev,
                            search=args.search)
    res["ember_compile_s"] = round(time.perf_counter() - t0, 2)
    res["ember_kernels"] = len(step.program.launches)

    # check: the first steps from the same weights on the same batches (--check-steps: the loss curve
    # over that many steps; the first 3 within 1e-3, the curve within 2e-2 relative: rounding differences
    # compound over steps of AdamW)
    tm = _load(model, tmodel, dev)
    topt = torch.optim.AdamW(tm.parameters(), lr=lr, weight_decay=0.01)
    worst, worst3, curve_e, curve_t = 0.0, 0.0, [], []
    for k in range(max(3, args.check_steps)):
        bt = first if k == 0 else batch()
        le = step(bt)
        topt.zero_grad()
        tl = t_loss(tm, *to_dev(bt, dev))
        tl.backward()
        topt.step()
        curve_e.append(float(le))
        curve_t.append(float(tl.item()))
        worst = max(worst, abs(le - tl.item()) / max(abs(tl.item()), 1e-6))
        if k < 3:
            worst3 = worst
    res["check"] = {"steps": len(curve_e), "max_rel_loss_diff_first3": worst3, "max_rel_loss_diff": worst,
                    "ok": bool(worst3 <= 1e-3 and worst <= 2e-2)}
    if len(curve_e) > 3:
        res["check"].update(ember_losses=curve_e, torch_losses=curve_t)
        print(f"[{name}] loss over {len(curve_e)} steps: ember {curve_e[0]:.4f} -> {curve_e[-1]:.4f}, torch "
              f"{curve_t[0]:.4f} -> {curve_t[-1]:.4f}, max relative difference {worst:.2e}", flush=True)

    batches = [batch() for _ in range(4)]
    it = iter(range(10 ** 9))
    res["ember_step_us"] = median_us(lambda: step(batches[next(it) % 4]), args.reps, dev)
    feed = {k: v for k, v in {**step.feed, **batches[0], "lr": np.float32(lr), "step": np.float32(10)}.items()
            if k in step.program.inputs}
    res["ember_program_us"] = step.program.benchmark(reps=args.reps, **feed)

    tb = [to_dev(b, dev) for b in batches]

    def eager_step(m, opt, k=[0]):
        k[0] += 1
        opt.zero_grad(set_to_none=True)
        t_loss(m, *tb[k[0] % 4]).backward()
        opt.step()
    res["torch_eager_us"] = median_us(lambda: eager_step(tm, topt), args.reps, dev)

    if not args.no_torch_compile:
        try:
            tc = torch.compile(_load(model, BUILDERS[name](cfg, np.random.default_rng(0))[1], dev))
            copt = torch.optim.AdamW(tc.parameters(), lr=lr, weight_decay=0.01)
            t0 = time.perf_counter()
            eager_step(tc, copt)
            res["torch_compile_s"] = round(time.perf_counter() - t0, 2)
            res["torch_compile_us"] = median_us(lambda: eager_step(tc, copt), args.reps, dev)
        except Exception as e:  # noqa: BLE001  (record why, keep the other numbers)
            res["torch_compile_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"

    if dev == "cuda":
        try:
            res["torch_cudagraph_us"] = _cudagraph_step_us(model, name, cfg, t_loss, tb[0], lr, args.reps)
        except Exception as e:  # noqa: BLE001
            res["torch_cudagraph_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"

    ref = res["ember_step_us"]
    for k in ("torch_eager_us", "torch_compile_us", "torch_cudagraph_us"):
        if k in res:
            res[f"speedup_vs_{k[:-3]}"] = round(res[k] / ref, 3)
    res["ember_step_tflops"] = round(flops / (ref * 1e-6) / 1e12, 4)
    return res


def _cudagraph_step_us(model, name, cfg, t_loss, tbatch, lr, reps) -> float:
    """PyTorch's whole-step capture (torch.cuda.graphs docs, 'whole network capture')."""
    tm = _load(model, BUILDERS[name](cfg, np.random.default_rng(0))[1], "cuda")
    opt = torch.optim.AdamW(tm.parameters(), lr=lr, weight_decay=0.01, capturable=True)
    sx, sy = tbatch[0].clone(), tbatch[1].clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            t_loss(tm, sx, sy).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        t_loss(tm, sx, sy).backward()
        opt.step()
    return median_us(graph.replay, reps, "cuda")


def main(args) -> None:
    names = [n for n in CONFIGS if args.only is None or args.only in n]
    out = {"suite": "train", "device": args.device, "search": args.search,
           "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
           "threads": args.threads or "default", "cases": []}
    if args.device == "cuda":
        out["gpu"] = torch.cuda.get_device_name(0)
    for n in names:
        print(f"[{n}] compiling and checking...", flush=True)
        out["cases"].append(run_case(n, args))
    hdr = f"{'case':<12} {'check':>6} {'ember step us':>14} {'ember prog us':>14} {'eager us':>10} " \
          f"{'compile us':>11} {'cudagraph us':>13} {'vs eager':>9} {'vs compile':>10}"
    print(hdr)
    for r in out["cases"]:
        def f(k, w, fmt="{:.1f}"):
            return f"{fmt.format(r[k]) if k in r else '-':>{w}}"
        print(f"{r['name']:<12} {'ok' if r['check']['ok'] else 'WRONG':>6} {f('ember_step_us', 14)} "
              f"{f('ember_program_us', 14)} {f('torch_eager_us', 10)} {f('torch_compile_us', 11)} "
              f"{f('torch_cudagraph_us', 13)} {f('speedup_vs_torch_eager', 9, '{:.2f}x')} "
              f"{f('speedup_vs_torch_compile', 10, '{:.2f}x')}")
    path = args.out or os.path.join(HERE, "results", f"train-{args.device}-{datetime.date.today().isoformat()}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main(ARGS)
